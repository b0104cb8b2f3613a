;;; torchlsp.el --- torchlsp through Eglot: status, site, settings from your init  -*- lexical-binding: t -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))
;; Keywords: languages, tools

;;; Commentary:

;; Plain Eglot runs torchlsp with two lines (see the README).  This file
;; adds what those lines cannot:
;;
;; - the server's own notifications, announced to it (it sends them only
;;   to a client that does): `torchlsp/status' in the mode line, and
;;   `torchlsp/site', the default target's site-packages view, in
;;   `torchlsp-site-directory' and `torchlsp-site-functions' (to hand it
;;   to a Python server or a checker);
;; - settings only from your init file: `torchlsp-settings' is sent to the
;;   server, and a repository's .dir-locals.el, which Eglot lets set
;;   `eglot-workspace-configuration' without asking, cannot define targets
;;   (commands torchlsp runs);
;; - documents the server opens (repro reports, when a run ends) in a
;;   window, and commands given `torchlsp-command-timeout' to finish (a run
;;   answers at once with its id, but the doctor, or a run asked to wait,
;;   takes longer than Eglot's 10 seconds).
;;
;; Set-up:
;;
;;   (require 'torchlsp)
;;   (setq torchlsp-settings
;;         '(:targets (:h200 (:ssh "me@gpu-box" :python "/opt/torch/.venv/bin/python3"))
;;           :defaultTarget "h200"))
;;   (torchlsp-eglot-setup)
;;   (add-hook 'python-mode-hook #'eglot-ensure)

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)

(defgroup torchlsp nil
  "torchlsp, the language server for a torch on another machine."
  :group 'tools
  :prefix "torchlsp-")

(defcustom torchlsp-program '("torchlsp" "serve" "--stdio")
  "The command that starts the server."
  :type '(repeat string))

(defcustom torchlsp-settings nil
  "The \"torchlsp\" settings sent to the server, as a plist.
For example (:targets (:h200 (:ssh \"me@gpu\" :python \"python3\"))
:defaultTarget \"h200\").  Only this value is sent: a directory-local
`eglot-workspace-configuration' is not.  Targets name commands torchlsp
runs, so this is never taken from a directory-local variable."
  :type 'sexp)
(put 'torchlsp-settings 'risky-local-variable t)

(defcustom torchlsp-command-timeout 900
  "Seconds a torchlsp command (a threaded repro, explain) may take."
  :type 'integer)

(defcustom torchlsp-site-functions nil
  "Functions called with TARGET and PATH when the server announces a site.
PATH is the default target's site-packages view, or \"\" while it has
none (the target changed, or its site failed)."
  :type 'hook)

(defvar torchlsp-site-directory nil
  "The site last announced by a torchlsp server (`torchlsp/site'), or nil.")

(defconst torchlsp--notifications ["torchlsp/status" "torchlsp/site"]
  "The server's own notifications this file handles.")

(defclass torchlsp-eglot-server (eglot-lsp-server)
  ((status :initform nil :accessor torchlsp--status
           :documentation "The default target's last torchlsp/status, a plist."))
  :documentation "A torchlsp server, started by Eglot.")

(cl-defmethod eglot-client-capabilities ((_server torchlsp-eglot-server))
  "Eglot's capabilities, with the notifications and documents handled here."
  (let* ((caps (copy-sequence (cl-call-next-method)))
         (window (copy-sequence (plist-get caps :window))))
    (setq caps (plist-put caps :experimental
                          (list :torchlsp (list :notifications torchlsp--notifications))))
    (plist-put caps :window (plist-put window :showDocument '(:support t)))))

(defun torchlsp--settings ()
  (or torchlsp-settings eglot--{}))

(cl-defmethod eglot-initialization-options ((_server torchlsp-eglot-server))
  (torchlsp--settings))

(cl-defmethod eglot-handle-request
  ((_server torchlsp-eglot-server) (_method (eql workspace/configuration)) &key items)
  "Answer the torchlsp section from `torchlsp-settings' only."
  (apply #'vector
         (mapcar (lambda (item)
                   (if (equal (plist-get item :section) "torchlsp") (torchlsp--settings) nil))
                 items)))

(defun torchlsp--signal-configuration (orig server)
  "Send a torchlsp SERVER `torchlsp-settings', never the directory-local
`eglot-workspace-configuration'; other servers get ORIG's."
  (if (cl-typep server 'torchlsp-eglot-server)
      (jsonrpc-notify server :workspace/didChangeConfiguration
                      (list :settings (list :torchlsp (torchlsp--settings))))
    (funcall orig server)))
(advice-add 'eglot-signal-didChangeConfiguration :around #'torchlsp--signal-configuration)

(cl-defmethod eglot-handle-notification
  ((server torchlsp-eglot-server) (_method (eql torchlsp/status)) &rest status)
  "Keep the default target's STATUS for the mode line; say when it fails."
  (let ((old (torchlsp--status server)))
    (setf (torchlsp--status server) status)
    (when (and (equal (plist-get status :state) "error")
               (not (equal old status)))
      (eglot--message "torchlsp: %s: %s" (plist-get status :target) (plist-get status :message))))
  (force-mode-line-update t))

(cl-defmethod eglot-handle-notification
  ((_server torchlsp-eglot-server) (_method (eql torchlsp/site)) &key target path &allow-other-keys)
  "Keep the announced site PATH of TARGET and run `torchlsp-site-functions'."
  (setq torchlsp-site-directory (and path (not (string-empty-p path)) path))
  (run-hook-with-args 'torchlsp-site-functions target (or path "")))

(cl-defmethod eglot-handle-request
  ((_server torchlsp-eglot-server) (_method (eql window/showDocument)) &key uri external _takeFocus selection &allow-other-keys)
  "Open a file the server shows (a repro report) in another window."
  (let ((path (and (not (eq external t)) (string-prefix-p "file://" uri) (eglot--uri-to-path uri))))
    (if (not (and path (file-readable-p path)))
        (list :success :json-false)
      (with-current-buffer (find-file-noselect path)
        (when selection
          (goto-char (eglot--lsp-position-to-point (plist-get selection :start))))
        (display-buffer (current-buffer)))
      (list :success t))))

(cl-defmethod eglot-execute-command ((_server torchlsp-eglot-server) _command _arguments)
  "Run a command with `torchlsp-command-timeout' to finish."
  (let ((jsonrpc-default-request-timeout torchlsp-command-timeout))
    (cl-call-next-method)))

(defun torchlsp-mode-line ()
  "The default target and its state, for the mode line of a torchlsp buffer."
  (let* ((server (and (bound-and-true-p eglot--managed-mode) (eglot-current-server)))
         (status (and (cl-typep server 'torchlsp-eglot-server) (torchlsp--status server))))
    (when status
      (format " torch:%s/%s" (plist-get status :target) (plist-get status :state)))))

;;;###autoload
(defun torchlsp-eglot-setup ()
  "Start torchlsp for Python buffers through Eglot with this file's class."
  (dolist (mode '(python-mode python-ts-mode))
    (add-to-list 'eglot-server-programs `(,mode . (torchlsp-eglot-server ,@torchlsp-program))))
  (add-to-list 'mode-line-misc-info '(:eval (torchlsp-mode-line))))

(provide 'torchlsp)

;;; torchlsp.el ends here
