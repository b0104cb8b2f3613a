// The TorchLSP extension: starts `torchlsp serve --stdio` for Python files,
// passes the torchlsp settings to it, shows its status and results.
import * as fs from "fs";
import * as os from "os";
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ResponseError,
  ServerOptions,
  State,
} from "vscode-languageclient/node";
import { findBinary, installCommand } from "./binary";
import { classifyResult, isMarkdownPath, isServerCommand, reproArgs, reproChoices, serverCommands } from "./results";
import { mapSettings, ServerSettings, targetNames } from "./settings";
import { renderStatus, StatusParams } from "./status";

const section = "torchlsp";

/** Holds what one activation owns; disposed on deactivate. */
class Extension implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly output = vscode.window.createOutputChannel("TorchLSP");
  private readonly statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  private readonly disposables: vscode.Disposable[] = [];
  private reportedProblems = "";
  // Documents opened lately (by window/showDocument or a result), by URI:
  // a result that names the file the server just showed does not open it twice.
  private readonly recentlyShown = new Map<string, number>();

  constructor() {
    this.statusItem.command = "torchlsp.ui.selectTarget";
    this.statusItem.name = "TorchLSP";
    this.disposables.push(this.output, this.statusItem);
  }

  register(): void {
    const cmd = (id: string, fn: (...args: unknown[]) => unknown) =>
      this.disposables.push(vscode.commands.registerCommand(id, fn));
    // Palette commands carry a ui. infix: the language client itself registers
    // the server's torchlsp.* commands (for code actions), and ids must not clash.
    cmd("torchlsp.ui.selectTarget", () => this.selectTarget());
    cmd("torchlsp.ui.repro", () => this.repro());
    cmd("torchlsp.ui.doctor", () => this.run(serverCommands.doctor, []));
    cmd("torchlsp.ui.openMirror", () => this.run(serverCommands.openMirror, []));
    cmd("torchlsp.ui.restart", () => this.restart());
    cmd("torchlsp.ui.showLog", () => this.output.show());
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(`${section}.path`)) void this.restart();
        else if (e.affectsConfiguration(section)) this.settings();
      }),
    );
  }

  /** Reads and maps the settings, telling the user once about each new set of problems. */
  settings(): ServerSettings {
    const config = vscode.workspace.getConfiguration(section);
    const { settings, problems } = mapSettings((key) => config.get(key));
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
    const configured = vscode.workspace.getConfiguration(section).get<string>("path");
    const binary = findBinary({
      configuredPath: configured,
      envPath: process.env.PATH,
      homeDir: os.homedir(),
      platform: process.platform,
      isExecutable: isExecutable,
    });
    if (!binary.found) {
      this.setStatus({ state: "error", message: binary.reason });
      void this.explainMissingBinary(binary.reason);
      return;
    }
    this.output.appendLine(`starting ${binary.path} serve --stdio`);
    const serverOptions: ServerOptions = { command: binary.path, args: ["serve", "--stdio"] };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file", language: "python" }],
      initializationOptions: () => this.settings(),
      outputChannel: this.output,
      synchronize: { configurationSection: section },
      middleware: {
        workspace: {
          // Answer the server's workspace/configuration for our section with the
          // mapped settings, so it sees one shape whichever way it asks.
          configuration: async (params, token, next) => {
            const raw = await next(params, token);
            if (!Array.isArray(raw)) return raw;
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
    this.client = client;
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped) this.setStatus({ state: "error", message: "server stopped" });
    });
    this.setStatus({ state: "connecting", target: this.settings().defaultTarget });
    try {
      await client.start();
    } catch (err) {
      this.setStatus({ state: "error", message: String(err) });
      void vscode.window.showErrorMessage(`TorchLSP: the server failed to start: ${err}`);
      return;
    }
    this.disposables.push(client.onNotification("torchlsp/status", (p: StatusParams) => this.setStatus(p)));
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

  private setStatus(p: StatusParams): void {
    const view = renderStatus(p);
    this.statusItem.text = view.text;
    this.statusItem.tooltip = view.tooltip;
    this.statusItem.backgroundColor = view.isError
      ? new vscode.ThemeColor("statusBarItem.errorBackground")
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

  private async selectTarget(): Promise<void> {
    const settings = this.settings();
    const items = targetNames(settings).map((name) => ({
      label: name,
      description: name === settings.defaultTarget ? "default" : describeTarget(settings, name),
    }));
    const picked = await vscode.window.showQuickPick(items, { placeHolder: "Target whose torch answers" });
    if (picked) await this.run(serverCommands.selectTarget, [{ target: picked.label }]);
  }

  private async repro(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.document.languageId !== "python") {
      void vscode.window.showInformationMessage("TorchLSP: open a Python file and place the cursor on the call to reproduce.");
      return;
    }
    const settings = this.settings();
    const choices = reproChoices(targetNames(settings), settings.defaultTarget);
    let choice = choices[0];
    if (choices.length > 1) {
      const picked = await vscode.window.showQuickPick(choices, { placeHolder: "Run the threaded repro on which target?" });
      if (!picked) return;
      choice = picked;
    }
    const line = editor.selection.active.line;
    await this.run(serverCommands.repro, [reproArgs(editor.document.uri.toString(), line, choice)]);
  }

  /** Runs a server command with progress and shows its result. */
  private async run(command: string, args: unknown[]): Promise<void> {
    const client = this.client;
    if (!client || !client.isRunning()) {
      void vscode.window.showErrorMessage("TorchLSP: the server is not running (see TorchLSP: Show Server Log).");
      return;
    }
    try {
      // Cancelling the notification cancels the request, which stops a repro
      // on the target.
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: progressTitle(command), cancellable: true },
        (_progress, token) => client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args }, token),
      );
      await this.show(command, result);
    } catch (err) {
      void vscode.window.showErrorMessage(`TorchLSP: ${command} failed: ${errorMessage(err)}`);
    }
  }

  private async show(command: string, result: unknown): Promise<void> {
    const out = classifyResult(result);
    if (out.open) await this.openDocument(vscode.Uri.parse(out.open.uri), out.open.preview);
    if (out.markdown) {
      const doc = await vscode.workspace.openTextDocument({ language: "markdown", content: out.markdown });
      await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: true });
      this.output.appendLine(`${command}: shown ${out.markdown.length} characters`);
    }
    if (out.message) void vscode.window.showInformationMessage(`TorchLSP: ${out.message}`);
  }

  /** Opens a file, as a rendered preview when it is markdown, unless it was just shown. */
  private async openDocument(uri: vscode.Uri, preview: boolean): Promise<void> {
    const last = this.recentlyShown.get(uri.toString());
    if (last !== undefined && Date.now() - last < recentlyShownMs) return;
    this.markShown(uri.toString());
    if (preview) {
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
    for (const d of this.disposables.splice(0)) d.dispose();
  }
}

// How long a document opened by the server counts as already shown.
const recentlyShownMs = 60_000;

function progressTitle(command: string): string {
  switch (command) {
    case serverCommands.repro:
      return "TorchLSP: running the threaded repro on the target…";
    case serverCommands.doctor:
      return "TorchLSP: checking the target…";
    default:
      return `TorchLSP: ${command}`;
  }
}

function describeTarget(settings: ServerSettings, name: string): string {
  const t = settings.targets[name];
  if (!t) return "this machine";
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
  current = new Extension();
  context.subscriptions.push(current);
  current.register();
  await current.start();
}

/** Called by VS Code on shutdown. */
export async function deactivate(): Promise<void> {
  const ext = current;
  current = undefined;
  if (ext) {
    await ext.stop();
    ext.dispose();
  }
}
