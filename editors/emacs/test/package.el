;;; package.el --- torchlsp.el with Eglot, headless  -*- lexical-binding: t -*-

;; The real server through editors/emacs/torchlsp.el: the notifications it
;; announces arrive (status, site) and Eglot's strict mode raises nothing;
;; a repository's .dir-locals.el cannot choose the targets; a repro run
;; from its code action outlasts Eglot's usual 10 s and opens its report.
;; Run as e2e.el (same environment):
;;
;;   emacs --batch -l editors/emacs/test/package.el

(let ((here (file-name-directory (or load-file-name buffer-file-name))))
  (load (expand-file-name "harness" here) nil t)
  (add-to-list 'load-path (expand-file-name ".." here)))
(require 'torchlsp)

;; A repository that tries to pick the target through Eglot's
;; configuration, which Emacs applies from .dir-locals.el without asking.
(defconst e2e--marker (concat e2e--tmp "evil-ran"))
(defconst e2e--evil (concat e2e--tmp "evil-python"))
(with-temp-file e2e--evil
  (insert (format "#!/bin/sh\ntouch %s\nexec %s \"$@\"\n" e2e--marker e2e--python)))
(set-file-modes e2e--evil #o755)
(with-temp-file (concat e2e--ws ".dir-locals.el")
  (prin1 `((python-mode . ((eglot-workspace-configuration
                            . (:torchlsp (:defaultTarget "evil" :targets (:evil (:python ,e2e--evil))))))))
         (current-buffer)))
(setq enable-local-variables t)

;;; torchlsp.el's set-up, as its commentary has it.
(setq torchlsp-settings
      `(:defaultTarget "fixture"
        :targets (:fixture (:python ,e2e--python :env (:PYTHONPATH ,e2e--pythonpath) :packages ["torch"]))))
(torchlsp-eglot-setup)
(add-hook 'python-mode-hook #'eglot-ensure)

(defvar e2e--sites nil "What `torchlsp-site-functions' was called with, newest first.")
(add-hook 'torchlsp-site-functions (lambda (target path) (push (list target path) e2e--sites)))

(defvar e2e--train nil)

(unless
    (e2e-check "torchlsp-eglot-setup starts torchlsp with its class"
      (find-file (concat e2e--ws "train.py"))
      (setq e2e--train (current-buffer))
      (unless (string-search "evil" (format "%S" eglot-workspace-configuration))
        (error "The .dir-locals.el was not applied: %S" eglot-workspace-configuration))
      (e2e--managed "train.py")
      (unless (cl-typep (e2e--server) 'torchlsp-eglot-server)
        (error "Server class %s" (eieio-object-class-name (e2e--server)))))
  (e2e--finish))

(e2e-check "torchlsp/status reaches the mode line: the init file's target, ready"
  (with-current-buffer e2e--train
    (e2e--wait "status ready" e2e--ready-seconds
               (lambda () (equal (plist-get (torchlsp--status (e2e--server)) :state) "ready")))
    (let ((line (torchlsp-mode-line)))
      (unless (equal line " torch:fixture/ready") (error "Mode line %S" line)))))

(e2e-check "torchlsp/site names the site, for the hook and the variable"
  (e2e--wait "a site announced" e2e--ready-seconds (lambda () torchlsp-site-directory))
  (unless (file-exists-p (expand-file-name "torch/__init__.py" torchlsp-site-directory))
    (error "No torch in the site %s" torchlsp-site-directory))
  (unless (member (list "fixture" torchlsp-site-directory) e2e--sites)
    (error "Hook called with %S" e2e--sites)))

(e2e-check "the .dir-locals.el's target never ran"
  (when (file-exists-p e2e--marker) (error "The repository's interpreter ran"))
  (dolist (s (e2e--notes-of 'torchlsp/status))
    (when (equal (plist-get s :target) "evil") (error "Status of the repository's target: %S" s))))

(e2e-check "a repro from its code action answers at once and opens its report when it ends"
  (with-current-buffer e2e--train
    (e2e--goto "torch.compile(" (length "torch."))
    (let* ((repro (cl-find-if (lambda (a) (equal (plist-get a :kind) "source.torchlsp.repro"))
                              (eglot-code-actions (point) (point))))
           (cmd (plist-get repro :command)))
      (unless repro (error "No repro action"))
      ;; The answer is the run's id, at once; the report opens when the
      ;; run ends.
      (let ((result (eglot-execute-command (e2e--server) (intern (plist-get cmd :command)) (plist-get cmd :arguments))))
        (unless (plist-get result :run) (error "Repro answered %S, not a run's id" result))
        (e2e--wait "the report opened" e2e--repro-seconds
                   (lambda ()
                     (cl-some (lambda (b) (string-suffix-p "/report.md" (or (buffer-file-name b) "")))
                              (buffer-list))))
        (unless (memq 'window/showDocument e2e--requests) (error "No window/showDocument"))))))

(e2e-check "strict mode: nothing unknown"
  (when e2e--warnings (error "Eglot warned: %S" e2e--warnings))
  (let ((unexpected (cl-set-difference e2e--requests '(workspace/configuration window/showDocument))))
    (when unexpected (error "Requests Eglot does not serve: %S" unexpected))))

(e2e--finish)

;;; package.el ends here
