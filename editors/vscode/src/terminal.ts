// Links in the integrated terminal: a target path printed there (a
// traceback in an ssh session to the target, a tail of its log) opens the
// mirror or the workspace file at the line, as the server maps it.
import * as vscode from "vscode";
import { ExecuteCommandRequest, LanguageClient } from "vscode-languageclient/node";
import { linksCommand, maxTerminalLine, TerminalTarget, terminalTargets, tracebackArgs, tracebackCommand } from "./links";

interface TorchlspTerminalLink extends vscode.TerminalLink {
  target: TerminalTarget;
}

/** Registers the terminal link provider and the Map Traceback command. */
export function registerTracebackLinks(client: () => LanguageClient | undefined, output: vscode.OutputChannel): vscode.Disposable[] {
  const provider: vscode.TerminalLinkProvider<TorchlspTerminalLink> = {
    async provideTerminalLinks(context, token) {
      const c = client();
      // Cheap filter first: only lines that may hold a Python file's path.
      if (!c?.isRunning() || context.line.length > maxTerminalLine || !/\.pyi?[:"]|File "/.test(context.line)) return [];
      try {
        const result = await c.sendRequest(ExecuteCommandRequest.type, { command: linksCommand, arguments: [{ text: context.line }] }, token);
        return terminalTargets(result, context.line.length).map((target) => ({
          startIndex: target.startIndex,
          length: target.length,
          tooltip: target.tooltip || undefined,
          target,
        }));
      } catch (err) {
        output.appendLine(`${linksCommand}: ${err instanceof Error ? err.message : String(err)}`);
        return [];
      }
    },
    async handleTerminalLink(link) {
      const { path, line, tooltip } = link.target;
      if (!path) {
        void vscode.window.showInformationMessage(`TorchLSP: not opened: ${tooltip}`);
        return;
      }
      const at = new vscode.Position(Math.max(0, line - 1), 0);
      await vscode.window.showTextDocument(vscode.Uri.file(path), { selection: new vscode.Range(at, at), preview: true });
    },
  };
  return [
    vscode.window.registerTerminalLinkProvider(provider),
    vscode.commands.registerCommand("torchlsp.ui.traceback", async () => {
      const c = client();
      const editor = vscode.window.activeTextEditor;
      if (!c?.isRunning() || !editor) {
        void vscode.window.showInformationMessage("TorchLSP: open the log that holds the traceback, and select it.");
        return;
      }
      const sel = editor.selection;
      const last = sel.isEmpty ? editor.document.lineCount - 1 : sel.end.line;
      const first = sel.isEmpty ? 0 : sel.start.line;
      try {
        await c.sendRequest(ExecuteCommandRequest.type, {
          command: tracebackCommand,
          arguments: [tracebackArgs(editor.document.uri.toString(), first, last)],
        });
      } catch (err) {
        void vscode.window.showErrorMessage(`TorchLSP: ${err instanceof Error ? err.message : String(err)}`);
      }
    }),
  ];
}
