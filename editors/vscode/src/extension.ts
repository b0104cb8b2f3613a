// The TorchLSP extension: starts `torchlsp serve --stdio` for Python files,
// passes the torchlsp settings to it, shows its status and results, keeps
// the mirror read-only, and points the user's Python server at the active
// target's site.
import { execFile } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ResponseError,
  ServerOptions,
  State,
} from "vscode-languageclient/node";
import { findBinary, installCommand } from "./binary";
import { documentSelector } from "./links";
import { classifyResult, isMarkdownPath, isServerCommand, OpenDocument, reproArgs, reproChoices, serverCommands } from "./results";
import { announceNotifications, presentedKind } from "./protocol";
import { mapSettings, ServerSettings, targetNames, userDefaultTarget } from "./settings";
import { Added, addPath, removePath, SiteChoice, settingName, sitePath, siteSettings, siteTarget } from "./site";
import { renderStatus, StatusParams, StatusTracker, WorkspaceFileView } from "./status";
import { registerTracebackLinks } from "./terminal";
import { cacheDir, describeSummary, stateDir, summarize, trustState, workspaceFile } from "./workspace";

const section = "torchlsp";

/** The server's command that reports the active target's site (newer servers). */
const siteCommand = "torchlsp.site";

/** Scheme of the read-only documents that hold a command's markdown. */
const resultScheme = "torchlsp-result";

/** Holds what one activation owns; disposed on deactivate. */
class Extension implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private binary: string | undefined;
  private readonly output = vscode.window.createOutputChannel("TorchLSP");
  private readonly statusItem = vscode.window.createStatusBarItem("torchlsp.status", vscode.StatusBarAlignment.Left, 10);
  private readonly disposables: vscode.Disposable[] = [];
  private readonly status = new StatusTracker();
  private readonly results = new ResultDocuments();
  private readonly site: SiteWiring;
  // The targets the server knows (every configuration layer), from its
  // listing; empty until it answered.
  private serverTargets: string[] = [];
  private workspaceFileView: WorkspaceFileView | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;
  // Targets whose site this server was told a Python server reads.
  private readonly siteAsked = new Set<string>();
  private reportedProblems = "";
  // Documents opened lately (by window/showDocument or a result), by URI:
  // a result that names the file the server just showed does not open it twice.
  private readonly recentlyShown = new Map<string, number>();

  constructor(context: vscode.ExtensionContext) {
    this.statusItem.command = "torchlsp.ui.selectTarget";
    this.statusItem.name = "TorchLSP";
    this.site = new SiteWiring(context.workspaceState, this.output, (target) => this.siteHanded(target));
    this.disposables.push(
      this.output,
      this.statusItem,
      vscode.workspace.registerTextDocumentContentProvider(resultScheme, this.results),
    );
  }

  register(): void {
    const cmd = (id: string, fn: (...args: unknown[]) => unknown) =>
      this.disposables.push(vscode.commands.registerCommand(id, fn));
    // Palette commands carry a ui. infix: the language client itself registers
    // the server's torchlsp.* commands (for code actions), and ids must not clash.
    cmd("torchlsp.ui.selectTarget", () => this.selectTarget());
    cmd("torchlsp.ui.repro", () => this.repro());
    cmd("torchlsp.ui.doctor", () => this.run(serverCommands.doctor, []));
    cmd("torchlsp.ui.cancelRuns", () => this.run(serverCommands.cancelRun, []));
    cmd("torchlsp.ui.openMirror", () => this.run(serverCommands.openMirror, []));
    cmd("torchlsp.ui.trust", () => this.trust());
    cmd("torchlsp.ui.restart", () => this.restart());
    cmd("torchlsp.ui.showLog", () => this.output.show());
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(`${section}.path`)) void this.restart();
        else if (e.affectsConfiguration(`${section}.site.enable`)) void this.site.setEnabled(siteEnabled());
        else if (e.affectsConfiguration(section)) {
          this.settings();
          this.scheduleRefresh(500);
        }
      }),
      // A repository's defaultTarget counts once the workspace is trusted.
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.configurationChanged()),
    );
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
      // The server reads torchlsp.toml again when told the configuration
      // changed; a changed file is untrusted until trusted again.
      const watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(folder, workspaceFile));
      const changed = () => this.configurationChanged();
      watcher.onDidChange(changed);
      watcher.onDidCreate(changed);
      watcher.onDidDelete(changed);
      this.disposables.push(watcher);
    }
    void this.site.setEnabled(siteEnabled());
    void ensureReadonlyMirror(this.output);
    this.disposables.push(...registerTracebackLinks(() => this.client, this.output));
  }

  /** Reads and maps the settings, telling the user once about each new set of problems. */
  settings(): ServerSettings {
    const config = vscode.workspace.getConfiguration(section);
    const { settings, problems } = mapSettings((key) =>
      key === "defaultTarget" ? userDefaultTarget(config.inspect(key), vscode.workspace.isTrusted) : config.get(key),
    );
    const joined = problems.join("\n");
    if (joined !== this.reportedProblems) {
      this.reportedProblems = joined;
      if (problems.length > 0) {
        for (const p of problems) this.output.appendLine(`settings: ${p}`);
        void vscode.window.showWarningMessage(`TorchLSP settings: ${problems.join("; ")}`);
      }
    }
    return settings;
  }

  async start(): Promise<void> {
    const binary = await locateBinary();
    if (!binary.found) {
      this.setStatus({ state: "error", message: binary.reason });
      void this.explainMissingBinary(binary.reason);
      return;
    }
    this.binary = binary.path;
    this.output.appendLine(`starting ${binary.path} serve --stdio`);
    const serverOptions: ServerOptions = { command: binary.path, args: ["serve", "--stdio"] };
    const clientOptions: LanguageClientOptions = {
      documentSelector,
      initializationOptions: () => this.settings(),
      outputChannel: this.output,
      synchronize: { configurationSection: section },
      middleware: {
        workspace: {
          // Answer the server's workspace/configuration for our section with the
          // mapped settings, so it sees one shape whichever way it asks. Each
          // pull is followed by the server reading its files again: ask it
          // for the active target once it has.
          configuration: async (params, token, next) => {
            const raw = await next(params, token);
            if (!Array.isArray(raw)) return raw;
            if (params.items.some((item) => item.section === section)) this.scheduleRefresh(400);
            return params.items.map((item, i) => (item.section === section ? this.settings() : raw[i]));
          },
        },
        // Commands the server attaches to code actions run through here; show
        // progress while they run and what they return, as the palette
        // commands do.
        executeCommand: async (command, args, next) => {
          if (!isServerCommand(command)) return next(command, args);
          const result = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Notification, title: progressTitle(command) },
            () => Promise.resolve(next(command, args)),
          );
          await this.show(command, result);
          return result;
        },
        // The runs (source.torchlsp.*) are listed beside the fix in the
        // Quick Fix menu, which VS Code keeps source actions out of.
        provideCodeActions: async (document, range, context, token, next) => {
          const actions = await next(document, range, context, token);
          if (!actions || context.only) return actions;
          for (const a of actions) {
            if (a instanceof vscode.CodeAction && a.kind) {
              const kind = presentedKind(a.kind.value, false);
              if (kind !== a.kind.value) a.kind = kind ? vscode.CodeActionKind.Empty.append(kind) : undefined;
            }
          }
          return actions;
        },
        window: {
          // The server opens repro reports (markdown) with window/showDocument:
          // show those rendered; everything else as the client would.
          showDocument: async (params, next) => {
            this.markShown(params.uri);
            const forward = async () => {
              const r = await next(params, new vscode.CancellationTokenSource().token);
              return r instanceof ResponseError ? { success: false } : r;
            };
            if (params.external || !isMarkdownPath(params.uri)) return forward();
            try {
              await vscode.commands.executeCommand("markdown.showPreviewToSide", vscode.Uri.parse(params.uri));
              return { success: true };
            } catch {
              return forward();
            }
          },
        },
      },
    };
    const client = new LanguageClient("torchlsp", "TorchLSP", serverOptions, clientOptions);
    // The server sends torchlsp/status and torchlsp/site only to clients
    // that announce them.
    client.registerFeature({
      fillClientCapabilities: (caps) => announceNotifications(caps),
      initialize: () => undefined,
      getState: () => ({ kind: "static" }),
      clear: () => undefined,
    });
    this.client = client;
    this.status.clear();
    void this.site.setActive(undefined);
    this.serverTargets = [];
    this.siteAsked.clear();
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped) this.setStatus({ state: "error", message: "server stopped" });
    });
    // Registered before start, so that the first notifications are not lost.
    this.disposables.push(
      client.onNotification("torchlsp/status", (p: StatusParams) => {
        this.status.update(p);
        void this.site.setActive(this.status.activeTarget());
        this.render();
      }),
      client.onNotification("torchlsp/site", (p: unknown) => void this.site.setPath(sitePath(p), siteTarget(p))),
    );
    this.render(this.settings().defaultTarget);
    try {
      await client.start();
    } catch (err) {
      this.setStatus({ state: "error", message: String(err) });
      void vscode.window.showErrorMessage(`TorchLSP: the server failed to start: ${err}`);
      return;
    }
    await this.refreshTargets();
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client && client.needsStop()) await client.stop(5000);
  }

  /** Takes out of the workspace settings what the extension put there. */
  async cleanUp(): Promise<void> {
    await this.site.clear();
  }

  /**
   * Tells the server its configuration changed (a torchlsp.toml was
   * written, trusted or untrusted; the workspace became trusted): it reads
   * its files and the editor's settings again, without a restart.
   */
  private configurationChanged(): void {
    this.updateWorkspaceFile();
    this.render();
    const client = this.client;
    if (client?.isRunning()) void client.sendNotification(DidChangeConfigurationNotification.type, { settings: null });
    this.scheduleRefresh(600);
  }

  /** Asks the server, after a pause, which targets it has and which is active. */
  private scheduleRefresh(ms: number): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = undefined;
      void this.refreshTargets();
    }, ms);
  }

  /**
   * Asks the server for its targets and the active one (selectTarget with
   * no name lists them), so pickers offer the targets of every layer and
   * the status bar shows the target that answers.
   */
  private async refreshTargets(): Promise<void> {
    this.updateWorkspaceFile();
    const client = this.client;
    if (client?.isRunning()) {
      try {
        const r = (await client.sendRequest(ExecuteCommandRequest.type, { command: serverCommands.selectTarget, arguments: [] })) as {
          targets?: unknown;
          default?: unknown;
        } | null;
        if (r && Array.isArray(r.targets)) this.serverTargets = r.targets.filter((t): t is string => typeof t === "string");
        if (r && typeof r.default === "string") this.status.setActive(r.default);
        void this.site.setActive(this.status.activeTarget());
      } catch (err) {
        this.output.appendLine(`listing targets: ${errorMessage(err)}`);
      }
    }
    this.render();
  }

  /**
   * Tells the server that a Python server now reads a target's site: it
   * asks torchlsp.site, after which hovers leave signatures and docstrings
   * to that server and definitions point into the site.
   */
  private async siteHanded(target: string): Promise<void> {
    const client = this.client;
    const commands = client?.initializeResult?.capabilities.executeCommandProvider?.commands ?? [];
    if (!client?.isRunning() || !commands.includes(siteCommand) || this.siteAsked.has(target)) return;
    this.siteAsked.add(target);
    try {
      await client.sendRequest(ExecuteCommandRequest.type, { command: siteCommand, arguments: target ? [{ target }] : [] });
    } catch (err) {
      this.output.appendLine(`${siteCommand}: ${errorMessage(err)}`);
    }
  }

  /** The first workspace folder's torchlsp.toml and its trust, as the server sees them. */
  private updateWorkspaceFile(): void {
    const folder = vscode.workspace.workspaceFolders?.[0];
    this.workspaceFileView = undefined;
    if (!folder || folder.uri.scheme !== "file") return;
    const file = path.join(folder.uri.fsPath, workspaceFile);
    let content: Buffer;
    try {
      content = fs.readFileSync(file);
    } catch {
      return;
    }
    let records: string | undefined;
    try {
      records = fs.readFileSync(path.join(stateDir(process.env, os.homedir()), "trusted.json"), "utf8");
    } catch {
      records = undefined;
    }
    this.workspaceFileView = { path: file, trust: trustState(file, content, records) };
  }

  private render(fallbackTarget?: string): void {
    this.setStatus(this.status.current(fallbackTarget));
  }

  private setStatus(p: StatusParams): void {
    const view = renderStatus(p, this.workspaceFileView);
    this.statusItem.text = view.text;
    this.statusItem.tooltip = view.tooltip;
    this.statusItem.command = view.needsTrust ? "torchlsp.ui.trust" : "torchlsp.ui.selectTarget";
    this.statusItem.backgroundColor = view.isError
      ? new vscode.ThemeColor("statusBarItem.errorBackground")
      : view.needsTrust
        ? new vscode.ThemeColor("statusBarItem.warningBackground")
        : undefined;
    this.statusItem.show();
  }

  private async explainMissingBinary(reason: string): Promise<void> {
    const copy = "Copy Install Command";
    const open = "Open Settings";
    const choice = await vscode.window.showErrorMessage(
      `TorchLSP: ${reason} Install it with \`${installCommand}\` (Go 1.26+) and make sure it is on PATH, or set torchlsp.path.`,
      copy,
      open,
    );
    if (choice === copy) await vscode.env.clipboard.writeText(installCommand);
    if (choice === open) await vscode.commands.executeCommand("workbench.action.openSettings", "torchlsp.path");
  }

  /** The targets to offer: every layer's, and the active one. */
  private async targetChoices(): Promise<{ settings: ServerSettings; names: string[]; active: string }> {
    await this.refreshTargets();
    const settings = this.settings();
    const names = targetNames(settings, this.serverTargets);
    const active = this.status.activeTarget() ?? settings.defaultTarget ?? "local";
    return { settings, names, active };
  }

  private async selectTarget(): Promise<void> {
    const { settings, names, active } = await this.targetChoices();
    const items = names.map((name) => ({
      label: name,
      description: name === active ? "active" : describeTarget(settings, name),
    }));
    const picked = await vscode.window.showQuickPick(items, { placeHolder: "Target whose torch answers" });
    if (!picked) return;
    const result = await this.run(serverCommands.selectTarget, [{ target: picked.label }]);
    const def = (result as { default?: unknown } | undefined)?.default;
    if (typeof def === "string") this.status.setActive(def);
    void this.site.setActive(this.status.activeTarget());
    this.render();
    this.scheduleRefresh(500);
  }

  private async repro(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== "python") {
      void vscode.window.showInformationMessage("TorchLSP: open a Python file and place the cursor on the call to reproduce.");
      return;
    }
    const { names, active } = await this.targetChoices();
    const choices = reproChoices(names, active);
    let choice = choices[0];
    if (choices.length > 1) {
      const picked = await vscode.window.showQuickPick(choices, { placeHolder: "Run the threaded repro on which target?" });
      if (!picked) return;
      choice = picked;
    }
    const line = editor.selection.active.line;
    await this.run(serverCommands.repro, [reproArgs(editor.document.uri.toString(), line, choice)]);
  }

  /**
   * Shows the workspace's torchlsp.toml and what it would make torchlsp
   * run, and on the user's word trusts it (`torchlsp trust DIR`) and has the
   * server apply it at once.
   */
  private async trust(): Promise<void> {
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder || folder.uri.scheme !== "file") {
      void vscode.window.showInformationMessage("TorchLSP: open a folder that holds a torchlsp.toml to trust it.");
      return;
    }
    const file = path.join(folder.uri.fsPath, workspaceFile);
    let text: string;
    try {
      text = fs.readFileSync(file, "utf8");
    } catch {
      void vscode.window.showInformationMessage(`TorchLSP: ${folder.name} has no ${workspaceFile}.`);
      return;
    }
    await vscode.window.showTextDocument(vscode.Uri.file(file), { viewColumn: vscode.ViewColumn.Beside, preview: true, preserveFocus: true });
    let what: string[];
    try {
      what = describeSummary(summarize(text));
    } catch (err) {
      what = [`(the file could not be read: ${errorMessage(err)}; read it before you trust it)`];
    }
    const answer = await vscode.window.showWarningMessage(
      `Trust ${file}?`,
      {
        modal: true,
        detail: `Trusting it lets torchlsp run, on this machine:\n${what.join("\n")}\n\nA change to the file needs trust again.`,
      },
      "Trust",
    );
    if (answer !== "Trust") return;
    const binary = this.binary ?? (await locateBinary().then((b) => (b.found ? b.path : undefined)));
    if (!binary) {
      void vscode.window.showErrorMessage("TorchLSP: the torchlsp binary was not found, so the file cannot be trusted.");
      return;
    }
    try {
      const out = await runFile(binary, ["trust", folder.uri.fsPath], 20_000);
      this.output.appendLine(out.trim());
      void vscode.window.showInformationMessage(`TorchLSP: trusted ${file}`);
    } catch (err) {
      void vscode.window.showErrorMessage(`TorchLSP: torchlsp trust failed: ${errorMessage(err)}`);
      return;
    }
    this.configurationChanged();
  }

  /** Runs a server command with progress, shows its result and returns it. */
  private async run(command: string, args: unknown[]): Promise<unknown> {
    const client = this.client;
    if (!client || !client.isRunning()) {
      void vscode.window.showErrorMessage("TorchLSP: the server is not running (see TorchLSP: Show Server Log).");
      return undefined;
    }
    try {
      // Cancelling the notification cancels the request. A run (repro,
      // explain) answers at once with its id and goes on: its own progress
      // has the cancel button, TorchLSP: Cancel Runs stops it too, and its
      // report opens when it ends.
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: progressTitle(command), cancellable: true },
        (_progress, token) => client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }, token),
      );
      await this.show(command, result);
      return result;
    } catch (err) {
      void vscode.window.showErrorMessage(`TorchLSP: ${command} failed: ${errorMessage(err)}`);
      return undefined;
    }
  }

  private async show(command: string, result: unknown): Promise<void> {
    const out = classifyResult(result);
    if (out.open) await this.openDocument(out.open);
    for (const other of out.also ?? []) await this.openDocument(other);
    if (out.markdown) {
      // Rendered, as the reports are; the text stays one click away.
      const uri = this.results.put(command, out.markdown);
      try {
        await vscode.commands.executeCommand("markdown.showPreviewToSide", uri);
      } catch {
        const doc = await vscode.workspace.openTextDocument(uri);
        await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: true });
      }
      this.output.appendLine(`${command}: shown ${out.markdown.length} characters`);
    }
    if (out.message) void vscode.window.showInformationMessage(`TorchLSP: ${out.message}`);
  }

  /** Opens a file, as a rendered preview when it is markdown, unless it was just shown. */
  private async openDocument(d: OpenDocument): Promise<void> {
    const uri = vscode.Uri.parse(d.uri);
    const last = this.recentlyShown.get(uri.toString());
    if (last !== undefined && Date.now() - last < recentlyShownMs) return;
    this.markShown(uri.toString());
    if (d.preview) {
      await vscode.commands.executeCommand("markdown.showPreviewToSide", uri);
      return;
    }
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  private markShown(uri: string): void {
    const now = Date.now();
    for (const [k, t] of this.recentlyShown) if (now - t >= recentlyShownMs) this.recentlyShown.delete(k);
    this.recentlyShown.set(vscode.Uri.parse(uri).toString(), now);
  }

  dispose(): void {
    if (this.refreshTimer) clearTimeout(this.refreshTimer);
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}

/**
 * Read-only documents holding the markdown a command returned (the
 * doctor's table), so it can be shown as a rendered preview.
 */
class ResultDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private count = 0;

  put(command: string, markdown: string): vscode.Uri {
    // Few results are kept: each is a window's worth of text.
    if (this.texts.size >= 20) this.texts.delete(this.texts.keys().next().value as string);
    const uri = vscode.Uri.from({ scheme: resultScheme, path: `/${command}-${++this.count}.md` });
    this.texts.set(uri.toString(), markdown);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }
}

/**
 * Puts the active target's site into the Python servers' extra paths of the
 * workspace settings, remembering (in the workspace's state, which outlives
 * a crash) exactly what it added, and takes that out again when the site
 * changes, the active target changes, the feature is turned off or the
 * extension stops. Only a site of the active target goes in (SiteChoice).
 */
class SiteWiring {
  private static readonly key = "torchlsp.site.added";
  // Changes run one after another: each reads what the last one wrote.
  private queue: Promise<void> = Promise.resolve();
  private readonly choice = new SiteChoice();
  private cleared = false;
  private enabled = true;

  constructor(
    private readonly state: vscode.Memento,
    private readonly output: vscode.OutputChannel,
    // Called when a target's site went into at least one setting.
    private readonly handed: (target: string) => Promise<void>,
  ) {}

  /** Records a torchlsp/site notification and applies it when its target is the active one. */
  setPath(p: string, target = ""): Promise<void> {
    this.choice.announce(target, p);
    return this.enqueue();
  }

  /** Follows the active target: another target's site goes out at once. */
  setActive(target: string | undefined): Promise<void> {
    return this.choice.setActive(target) ? this.enqueue() : this.queue;
  }

  /** Takes out what was added, for good (the extension stops). */
  clear(): Promise<void> {
    this.cleared = true;
    return this.enqueue();
  }

  setEnabled(on: boolean): Promise<void> {
    this.enabled = on;
    return this.enqueue();
  }

  private enqueue(): Promise<void> {
    this.queue = this.queue.then(async () => {
      // What is current when the change runs, not when it was asked for.
      const site = this.choice.current();
      const want = this.enabled && !this.cleared ? site.path : "";
      if (await this.apply(want)) await this.handed(site.target);
    }).catch((err) => {
      this.output.appendLine(`site settings: ${errorMessage(err)}`);
    });
    return this.queue;
  }

  /** Makes the settings hold want ("" for none); reports whether any setting holds it from the extension. */
  private async apply(want: string): Promise<boolean> {
    let added = this.state.get<Added[]>(SiteWiring.key, []);
    if (added.length > 0 && added.every((a) => a.path === want)) return want !== "";
    const kept: Added[] = [];
    for (const a of added) {
      const s = siteSettings.find((x) => settingName(x) === a.setting);
      if (!s) continue;
      const config = vscode.workspace.getConfiguration(s.section);
      const v = config.inspect(s.key);
      const change = removePath(v?.workspaceValue, v?.globalValue ?? v?.defaultValue, a);
      if (!change) continue;
      try {
        await config.update(s.key, change.value, vscode.ConfigurationTarget.Workspace);
        this.output.appendLine(`site: took ${a.path} out of ${a.setting}`);
      } catch (err) {
        kept.push(a);
        this.output.appendLine(`site: ${a.setting}: ${errorMessage(err)}`);
      }
    }
    added = kept;
    await this.state.update(SiteWiring.key, added);
    if (want === "" || !vscode.workspace.workspaceFolders?.length) return false;
    for (const s of siteSettings) {
      const config = vscode.workspace.getConfiguration(s.section);
      const v = config.inspect(s.key);
      const plan = addPath(settingName(s), v?.workspaceValue, v?.globalValue ?? v?.defaultValue, want);
      if (!plan) continue;
      try {
        await config.update(s.key, plan.change.value, vscode.ConfigurationTarget.Workspace);
        added.push(plan.added);
        this.output.appendLine(`site: added ${want} to ${plan.added.setting}`);
      } catch (err) {
        // Without the extension that declares it, VS Code refuses to write a
        // setting; nothing reads it then.
        this.output.appendLine(`site: ${settingName(s)} not set: ${errorMessage(err)}`);
      }
      await this.state.update(SiteWiring.key, added);
    }
    return added.some((a) => a.path === want);
  }
}

function siteEnabled(): boolean {
  return vscode.workspace.getConfiguration(section).get<boolean>("site.enable", true);
}

/**
 * Marks the mirror (the read-only copies of the targets' sources that
 * definitions open) read-only in every editor, through the user's
 * files.readonlyInclude: the cache is shared by all workspaces.
 */
async function ensureReadonlyMirror(output: vscode.OutputChannel): Promise<void> {
  const pattern = `${cacheDir(process.env, os.homedir()).split(path.sep).join("/")}/**`;
  const config = vscode.workspace.getConfiguration("files");
  const current = config.inspect<Record<string, boolean>>("readonlyInclude")?.globalValue ?? {};
  if (current[pattern] === true) return;
  try {
    await config.update("readonlyInclude", { ...current, [pattern]: true }, vscode.ConfigurationTarget.Global);
    output.appendLine(`files.readonlyInclude: ${pattern}`);
  } catch (err) {
    output.appendLine(`files.readonlyInclude not set: ${errorMessage(err)}`);
  }
}

/** Finds the server binary: torchlsp.path, PATH, ~/.local/bin, GOBIN, GOPATH/bin, ~/go/bin. */
async function locateBinary(): Promise<ReturnType<typeof findBinary>> {
  const lookup = {
    configuredPath: vscode.workspace.getConfiguration(section).get<string>("path"),
    envPath: process.env.PATH,
    homeDir: os.homedir(),
    platform: process.platform,
    isExecutable: isExecutable,
  };
  const first = findBinary(lookup);
  if (first.found || (lookup.configuredPath ?? "").trim() !== "") return first;
  // Only now ask go where `go install` puts binaries: it takes a moment.
  const goEnv = await runFile("go", ["env", "GOBIN", "GOPATH"], 5000).catch(() => undefined);
  return findBinary({ ...lookup, goEnv });
}

/** Runs a program, bounded by a timeout, and returns its standard output. */
function runFile(file: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, encoding: "utf8" }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${path.basename(file)} ${args.join(" ")}: ${(stderr || err.message).trim()}`));
      else resolve(stdout);
    });
  });
}

// How long a document opened by the server counts as already shown.
const recentlyShownMs = 60_000;

function progressTitle(command: string): string {
  switch (command) {
    case serverCommands.repro:
      return "TorchLSP: starting the threaded repro on the target…";
    case serverCommands.cancelRun:
      return "TorchLSP: cancelling the runs…";
    case serverCommands.doctor:
      return "TorchLSP: checking the target…";
    default:
      return `TorchLSP: ${command}`;
  }
}

function describeTarget(settings: ServerSettings, name: string): string {
  const t = settings.targets[name];
  if (!t) return name === "local" ? "this machine" : "from torchlsp.toml or config.toml";
  const hops = [...(t.jump ?? []), t.ssh, t.exec?.join(" ")].filter(Boolean);
  return hops.length > 0 ? `${hops.join(" → ")} → ${t.python}` : t.python;
}

function isExecutable(file: string): boolean {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) return false;
    if (process.platform === "win32") return true;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

let current: Extension | undefined;

/** Called by VS Code when a Python file opens or a TorchLSP command runs. */
export async function activate(context: vscode.ExtensionContext): Promise<void> {
  current = new Extension(context);
  context.subscriptions.push(current);
  current.register();
  await current.start();
}

/**
 * Called by VS Code on shutdown, and when the extension is disabled or
 * uninstalled: the site entries it added to the workspace settings go.
 */
export async function deactivate(): Promise<void> {
  const ext = current;
  current = undefined;
  if (ext) {
    await ext.cleanUp().catch(() => {});
    await ext.stop();
    ext.dispose();
  }
}
