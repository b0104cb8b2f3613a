;;; e2e.el --- torchlsp in plain Eglot, headless  -*- lexical-binding: t -*-

;; End-to-end test: the real torchlsp server started by Eglot (Debian's
;; elpa-eglot 1.9 on Emacs 28) exactly as the README sets it up, on a copy
;; of the fixture workspace.  Run:
;;
;;   TORCHLSP_BIN=bin/torchlsp TORCHLSP_FIXTURE_WS=editors/testdata/workspace \
;;   TORCHLSP_PYTHON=/usr/bin/python3 TORCHLSP_PYTHONPATH=editors/testdata/site \
;;   emacs --batch -l editors/emacs/test/e2e.el
;;
;; Prints one "ok"/"not ok" line per check and "N passed, N failed" last;
;; exits non-zero when a check fails, after printing the servers' stderr.
;; Every wait is on an event (a reply, a notification, a buffer) with a
;; deadline.

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

;;; The README's set-up, as a user's init file has it.
(add-to-list 'eglot-server-programs '(python-mode . ("torchlsp" "serve" "--stdio")))
(add-hook 'python-mode-hook #'eglot-ensure)
(setq-default eglot-workspace-configuration
              `(:torchlsp (:defaultTarget "fixture"
                           :targets (:fixture (:python ,e2e--python
                                               :env (:PYTHONPATH ,e2e--pythonpath)
                                               :packages ["torch"])))))
;; Unknown notifications warn and unknown requests fail.
(setq eglot-strict-mode '(disallow-unknown-methods))
(setq enable-local-variables nil
      python-indent-guess-indent-offset nil
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
(defvar e2e--todo 0)

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
  (e2e--out "%d passed, %d failed%s" e2e--passed e2e--failed
            (if (> e2e--todo 0) (format ", %d expected to pass later" e2e--todo) ""))
  (kill-emacs (if (> e2e--failed 0) 1 0)))

(defvar e2e--train nil "The buffer of train.py.")
(defvar e2e--uri nil)

(unless
    (e2e-check "eglot-ensure starts torchlsp serve --stdio for train.py"
      (unless (file-executable-p e2e--bin) (error "Server binary not executable: %s" e2e--bin))
      (find-file (concat e2e--ws "train.py"))
      (setq e2e--train (current-buffer)
            e2e--uri (eglot--path-to-uri buffer-file-name))
      (unless (eq major-mode 'python-mode) (error "Mode is %s" major-mode))
      (e2e--managed "train.py")
      (let ((info (eglot--server-info (e2e--server))))
        (unless (equal (plist-get info :name) "torchlsp") (error "Server info %S" info))))
  (e2e--finish))

(e2e-check "hover on torch.compile is plain text naming the target's source"
  (with-current-buffer e2e--train
    (e2e--goto "torch.compile(" (length "torch."))
    (let* ((params (eglot--TextDocumentPositionParams))
           (value "")
           (contents
            ;; The first answers may come before the target is mirrored.
            (e2e--wait "a hover naming torch/__init__.py" e2e--ready-seconds
                       (lambda ()
                         (let ((c (plist-get (ignore-errors (e2e--request :textDocument/hover params)) :contents)))
                           (setq value (or (plist-get c :value) ""))
                           (and (string-match-p "torch/__init__\\.py:[0-9]+" value) c))))))
      (unless (equal (plist-get contents :kind) "plaintext")
        (error "Hover kind %S, Eglot without markdown-mode asks for plaintext" (plist-get contents :kind)))
      (dolist (markup '("```" "**" "](" "file://" "`"))
        (when (string-search markup value) (error "Plain-text hover holds %S: %s" markup value)))
      (unless (string-search e2e--cache value) (error "Hover names no mirror file: %s" value)))))

(defvar e2e--mirror nil "The mirror's torch/__init__.py buffer.")

(e2e-check "definition of torch.compile opens def compile in the mirror, read-only"
  (with-current-buffer e2e--train
    (e2e--goto "torch.compile(" (length "torch."))
    (let ((b (e2e--find-definition)))
      (with-current-buffer b
        (unless (and buffer-file-name (string-prefix-p e2e--cache buffer-file-name)
                     (string-suffix-p "/torch/__init__.py" buffer-file-name))
          (error "Definition opened %s" buffer-file-name))
        (unless (string-match-p "def compile" (e2e--line)) (error "Line %d is %S" (line-number-at-pos) (e2e--line)))
        (unless buffer-read-only (error "The mirror file is writable"))
        (setq e2e--mirror b)))))

;; Onward inside the mirror. Eglot roots a project at the mirror file's
;; directory and starts a server there; until a server started inside a
;; mirror serves that mirror's target (being built), a failure here is
;; reported as expected to pass later, not as a failure.
(when e2e--mirror
  (let ((ok nil) (why nil))
    (condition-case err
        (with-current-buffer e2e--mirror
          (e2e--managed "the mirror file")
          (e2e--goto "list_mode_options(mode)")
          (let ((found nil))
            (e2e--wait "a definition of list_mode_options" 60
                       (lambda ()
                         (setq found (ignore-errors
                                       (xref-backend-definitions 'eglot (xref-backend-identifier-at-point 'eglot))))))
            (let* ((loc (xref-item-location (car found)))
                   (file (xref-file-location-file loc)))
              (unless (string-suffix-p "/torch/_inductor/__init__.py" file)
                (error "Definition in %s" file))
              (setq ok t))))
      (error (setq why (error-message-string err))))
    (if ok
        (progn (cl-incf e2e--passed)
               (e2e--out "ok %d - definition onward inside the mirror: list_mode_options in torch/_inductor/__init__.py"
                         (+ e2e--passed e2e--failed)))
      (cl-incf e2e--todo)
      (e2e--out "not ok - definition onward inside the mirror # TODO expected to pass once a server started in a mirror serves its target: %s"
                (replace-regexp-in-string "\n" " | " why)))))

(defvar e2e--tl001 nil "The TL001 diagnostic on train.py.")

(defun e2e--diagnostics-for (uri)
  "The diagnostics of the last publishDiagnostics for URI."
  (cl-loop for n in e2e--notes
           when (and (eq (car n) 'textDocument/publishDiagnostics)
                     (equal (plist-get (cdr n) :uri) uri))
           return (append (plist-get (cdr n) :diagnostics) nil)))

(defun e2e--tl001-in (diags)
  (cl-find-if (lambda (d) (string-prefix-p "TL001" (format "%s" (plist-get d :code)))) diags))

(e2e-check "TL001 on the compile call, with torch's lines in its message"
  (setq e2e--tl001 (e2e--wait "TL001 on train.py" e2e--ready-seconds
                              (lambda () (e2e--tl001-in (e2e--diagnostics-for e2e--uri)))))
  (let ((lines (split-string (plist-get e2e--tl001 :message) "\n")))
    (when (plist-get e2e--tl001 :relatedInformation)
      (error "Related information sent to a client that cannot show it"))
    (unless (and (>= (length lines) 3) (cl-every (lambda (l) (string-prefix-p "torch/" l)) (cdr lines)))
      (error "TL001 message holds no torch lines: %S" lines))))

(defun e2e--range-bounds (range)
  (with-current-buffer e2e--train
    (list (eglot--lsp-position-to-point (plist-get range :start))
          (eglot--lsp-position-to-point (plist-get range :end)))))

(e2e-check "a threaded repro from its code action; its report named in a message"
  (unless e2e--tl001 (error "No TL001"))
  (with-current-buffer e2e--train
    (pcase-let* ((`(,beg ,end) (e2e--range-bounds (plist-get e2e--tl001 :range)))
                 (actions (eglot-code-actions beg end))
                 (repro (cl-find-if (lambda (a) (string-prefix-p "Run threaded repro on" (plist-get a :title))) actions)))
      (unless repro (error "No repro among %S" (mapcar (lambda (a) (plist-get a :title)) actions)))
      (unless (equal (plist-get repro :kind) "source.torchlsp.repro") (error "Repro kind %S" (plist-get repro :kind)))
      (let* ((cmd (plist-get repro :command))
             (result (let ((jsonrpc-default-request-timeout e2e--repro-seconds))
                       (eglot-execute-command (e2e--server) (intern (plist-get cmd :command)) (plist-get cmd :arguments))))
             (path (plist-get result :path)))
        (unless (and path (file-exists-p path)) (error "Repro result %S names no report" result))
        (e2e--wait "a message naming the report" 10
                   (lambda ()
                     (cl-some (lambda (p) (string-search path (plist-get p :message)))
                              (e2e--notes-of 'window/showMessage))))))))

(e2e-check "the only quick fix is TL001's edit, applied without a question"
  (unless e2e--tl001 (error "No TL001"))
  (with-current-buffer e2e--train
    (pcase-let* ((`(,beg ,end) (e2e--range-bounds (plist-get e2e--tl001 :range)))
                 (fixes (eglot-code-actions beg end "quickfix"))
                 (before (buffer-string)))
      (unless (and (= (length fixes) 1) (plist-get (car fixes) :edit))
        (error "Quick fixes: %S" (mapcar (lambda (a) (plist-get a :title)) fixes)))
      ;; Interactively, one action of the kind asked is applied at once.
      (eglot-code-actions beg end "quickfix" t)
      (when (equal before (buffer-string)) (error "The fix changed nothing"))
      (when (string-search "mode=\"reduce-overhead\"" (buffer-string)) (error "reduce-overhead is still there"))
      ;; Eglot sends the change from an idle timer, and a batch Emacs is
      ;; never idle: send it as that timer would.
      (eglot--signal-textDocument/didChange)
      (e2e--wait "diagnostics without TL001 after the fix" 30
                 (lambda ()
                   (let ((d (e2e--diagnostics-for e2e--uri)))
                     (and (cl-loop for n in e2e--notes
                                   thereis (and (eq (car n) 'textDocument/publishDiagnostics)
                                                (equal (plist-get (cdr n) :uri) e2e--uri)
                                                ;; Eglot's first version is 0.
                                                (> (or (plist-get (cdr n) :version) 0) 0)))
                          (not (e2e--tl001-in d)))))))))

(e2e-check "strict mode: nothing unknown, nothing unannounced"
  (when e2e--warnings (error "Eglot warned: %S" e2e--warnings))
  (dolist (m '(torchlsp/status torchlsp/site $/progress))
    (when (e2e--notes-of m) (error "%s sent to a client that did not announce it" m)))
  (let ((unexpected (cl-remove 'workspace/configuration e2e--requests)))
    (when unexpected (error "Requests Eglot does not serve: %S" unexpected)))
  (unless (e2e--notes-of 'window/logMessage) (error "No log lines at all")))

(e2e--finish)

;;; e2e.el ends here
