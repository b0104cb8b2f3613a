;;; harness.el --- what the Emacs tests share  -*- lexical-binding: t -*-

;; Loaded by the tests beside it: a sandbox of the run's own (a copy of
;; the fixture workspace, the server's cache, state and configuration),
;; Eglot in strict mode, a record of what the servers send, checks printed
;; as "ok"/"not ok" lines, waits on events with deadlines, and the end of
;; the run (the servers' stderr and events printed on failure).  The
;; environment is e2e.el's.

(require 'cl-lib)
(require 'subr-x)
(require 'eglot)
(require 'xref)
(require 'python)

(defun e2e--env (name default)
  (let ((v (getenv name)))
    (if (or (null v) (string-empty-p v)) default v)))

(defconst e2e--bin (expand-file-name (e2e--env "TORCHLSP_BIN" "bin/torchlsp")))
(defconst e2e--python (e2e--env "TORCHLSP_PYTHON" "/usr/bin/python3"))
(defconst e2e--pythonpath (expand-file-name (e2e--env "TORCHLSP_PYTHONPATH" "editors/testdata/site")))
(defconst e2e--fixture (expand-file-name (e2e--env "TORCHLSP_FIXTURE_WS" "editors/testdata/workspace")))
(defconst e2e--ready-seconds (string-to-number (e2e--env "TORCHLSP_READY_TIMEOUT" "120")))
;; The repro command answers when the run ends.
(defconst e2e--repro-seconds 300)

;; A sandbox of this run's own: the workspace (repros write under it),
;; the server's cache, state and configuration.
(defconst e2e--tmp (file-name-as-directory (file-truename (make-temp-file "torchlsp-eglot-" t))))
(defconst e2e--ws (concat e2e--tmp "workspace/"))
(defconst e2e--cache (concat e2e--tmp "cache/"))
(copy-directory e2e--fixture e2e--ws nil nil t)
(setenv "XDG_CACHE_HOME" e2e--cache)
(setenv "XDG_STATE_HOME" (concat e2e--tmp "state/"))
(setenv "XDG_CONFIG_HOME" (concat e2e--tmp "config/"))
;; "torchlsp" on PATH, as the README assumes.
(setq exec-path (cons (file-name-directory e2e--bin) exec-path))
(setenv "PATH" (concat (file-name-directory e2e--bin) path-separator (getenv "PATH")))

;; Unknown notifications warn and unknown requests fail.
(setq eglot-strict-mode '(disallow-unknown-methods))
(setq python-indent-guess-indent-offset nil
      eglot-sync-connect nil)

;;; What the server sends, and what Eglot says about it.
(defvar e2e--notes nil "Notifications from the servers, newest first: (METHOD . PARAMS).")
(defvar e2e--requests nil "Requests from the servers, newest first: METHOD.")
(defvar e2e--warnings nil "Eglot's warnings, newest first.")
(advice-add 'eglot-handle-notification :before
            (lambda (_server method &rest params) (push (cons method params) e2e--notes)))
(advice-add 'eglot-handle-request :before
            (lambda (_server method &rest _params) (push method e2e--requests)))
(advice-add 'eglot--warn :before
            (lambda (format &rest args) (push (apply #'format format args) e2e--warnings)))

(defvar e2e--passed 0)
(defvar e2e--failed 0)

(defun e2e--out (fmt &rest args)
  (princ (concat (apply #'format fmt args) "\n")))

(defmacro e2e-check (name &rest body)
  "Run BODY as the check NAME; an error in BODY fails it."
  (declare (indent 1))
  `(condition-case err
       (progn ,@body
              (cl-incf e2e--passed)
              (e2e--out "ok %d - %s" (+ e2e--passed e2e--failed) ,name)
              t)
     (error (cl-incf e2e--failed)
            (e2e--out "not ok %d - %s: %s" (+ e2e--passed e2e--failed) ,name
                      (replace-regexp-in-string "\n" " | " (error-message-string err)))
            nil)))

(defun e2e--wait (what seconds pred)
  "Wait up to SECONDS for PRED to return non-nil, serving the servers meanwhile.
Return PRED's value; fail naming WHAT on the deadline."
  (let ((deadline (+ (float-time) seconds))
        value)
    (while (and (not (setq value (funcall pred))) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (or value (error "Waited %s s for %s" seconds what))))

(defun e2e--notes-of (method)
  "The params of the notifications METHOD received, oldest first."
  (let (out)
    (dolist (n e2e--notes out)
      (when (eq (car n) method) (push (cdr n) out)))))

(defun e2e--goto (needle &optional offset)
  "Put point on NEEDLE's first occurrence in the buffer, OFFSET chars in."
  (goto-char (point-min))
  (unless (search-forward needle nil t) (error "No %S in %s" needle (buffer-name)))
  (goto-char (+ (match-beginning 0) (or offset 0))))

(defun e2e--server ()
  (or (eglot-current-server) (error "No Eglot server for %s" (buffer-name))))

(defun e2e--request (method params &optional seconds)
  (jsonrpc-request (e2e--server) method params :timeout (or seconds 15)))

(defun e2e--managed (what)
  "Run the command loop's hook once (`eglot-ensure' connects there) and wait
for Eglot to manage the current buffer."
  (run-hooks 'post-command-hook)
  (e2e--wait (concat "Eglot to manage " what) 30 (lambda () (bound-and-true-p eglot--managed-mode))))

(defun e2e--find-definition ()
  "Go to the definition at point, as M-. does; return the buffer it opened."
  (xref-find-definitions (xref-backend-identifier-at-point 'eglot))
  (current-buffer))

(defun e2e--line ()
  (buffer-substring-no-properties (line-beginning-position) (line-end-position)))

(defun e2e--finish ()
  (when (> e2e--failed 0)
    (dolist (b (buffer-list))
      (when (string-match-p "EGLOT.*\\(stderr\\|events\\)" (buffer-name b))
        (with-current-buffer b
          (e2e--out "--- %s (last 8000 chars)\n%s" (buffer-name b)
                    (buffer-substring-no-properties (max (point-min) (- (point-max) 8000)) (point-max)))))))
  (dolist (s (cl-loop for servers being the hash-values of eglot--servers-by-project append servers))
    (ignore-errors (eglot-shutdown s nil 5)))
  (delete-directory e2e--tmp t)
  (e2e--out "%d passed, %d failed" e2e--passed e2e--failed)
  (kill-emacs (if (> e2e--failed 0) 1 0)))

(defun e2e--diagnostics-for (uri)
  "The diagnostics of the last publishDiagnostics for URI."
  (cl-loop for n in e2e--notes
           when (and (eq (car n) 'textDocument/publishDiagnostics)
                     (equal (plist-get (cdr n) :uri) uri))
           return (append (plist-get (cdr n) :diagnostics) nil)))

(defun e2e--tl001-in (diags)
  (cl-find-if (lambda (d) (string-prefix-p "TL001" (format "%s" (plist-get d :code)))) diags))

(provide 'harness)

;;; harness.el ends here
