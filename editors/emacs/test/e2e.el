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

(load (expand-file-name "harness" (file-name-directory (or load-file-name buffer-file-name))) nil t)
(setq enable-local-variables nil)

;;; The README's set-up, as a user's init file has it.
(add-to-list 'eglot-server-programs '(python-mode . ("torchlsp" "serve" "--stdio")))
(add-hook 'python-mode-hook #'eglot-ensure)
(setq-default eglot-workspace-configuration
              `(:torchlsp (:defaultTarget "fixture"
                           :targets (:fixture (:python ,e2e--python
                                               :env (:PYTHONPATH ,e2e--pythonpath)
                                               :packages ["torch"])))))

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
;; directory and starts a second server there; with the targets in the
;; init file's `eglot-workspace-configuration', it answers for them too.
(e2e-check "definition onward inside the mirror: list_mode_options in torch/_inductor/__init__.py"
  (unless e2e--mirror (error "No mirror buffer"))
  (with-current-buffer e2e--mirror
    (e2e--managed "the mirror file")
    (e2e--goto "list_mode_options(mode)")
    (let* ((found (e2e--wait "a definition of list_mode_options" 60
                             (lambda ()
                               (ignore-errors
                                 (xref-backend-definitions 'eglot (xref-backend-identifier-at-point 'eglot))))))
           (file (xref-file-location-file (xref-item-location (car found)))))
      (unless (string-suffix-p "/torch/_inductor/__init__.py" file)
        (error "Definition in %s" file)))))

(defvar e2e--tl001 nil "The TL001 diagnostic on train.py.")

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
      ;; The command answers at once with the run's id (within Eglot's
      ;; usual 10 s); the report is named in a message when the run ends.
      (let* ((cmd (plist-get repro :command))
             (result (eglot-execute-command (e2e--server) (intern (plist-get cmd :command)) (plist-get cmd :arguments)))
             (message (progn
                        (unless (plist-get result :run) (error "Repro answered %S, not a run's id" result))
                        (e2e--wait "a message naming the report" e2e--repro-seconds
                                   (lambda ()
                                     (cl-some (lambda (p)
                                                (let ((m (plist-get p :message)))
                                                  (and (string-search "threaded repro report: " m) m)))
                                              (e2e--notes-of 'window/showMessage))))))
             (path (cadr (split-string message "threaded repro report: "))))
        (unless (and path (string-suffix-p "/report.md" path) (file-exists-p path))
          (error "The message %S names no report" message))))))

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
