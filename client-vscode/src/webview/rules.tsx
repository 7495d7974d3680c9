/**
 * The project rules files the model is given (protocol.md, "Project rules"): one line under
 * the toolbar, each file a button that opens it, with its size and whether it was cut to fit.
 * Nothing is shown when there is none.
 */
import { displayText } from "../display";
import type { WebviewMessage } from "../panel/messages";
import type { InstructionsFile } from "../protocol";

/** `512 B`, `1.2 KB` (1024 bytes a KB, one decimal), `3.4 MB`: as `toolwire run` prints them. */
export function sizeText(bytes: number): string {
  if (bytes < 1024) {
    return `${bytes} B`;
  }
  if (bytes < 1024 * 1024) {
    return `${(bytes / 1024).toFixed(1)} KB`;
  }
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

export function RulesBar({ files, send }: { files: readonly InstructionsFile[]; send: (message: WebviewMessage) => void }) {
  if (files.length === 0) {
    return null;
  }
  return (
    <div class="rules" role="group" aria-label="Project rules given to the model">
      <i class="codicon codicon-book" aria-hidden="true" />
      <span class="rules-label">Rules:</span>
      {files.map((file) => {
        const size = `${sizeText(file.bytes)}${file.truncated ? ", cut to fit 32 KB" : ""}`;
        return (
          <button
            key={file.path}
            type="button"
            class={`rules-file link${file.truncated ? " truncated" : ""}`}
            title={`Open ${displayText(file.path)}: ${size}${file.truncated ? " (only the start reached the model)" : ""}`}
            onClick={() => send({ type: "openFile", path: file.path })}
          >
            {displayText(file.path)} <span class="rules-size">({size})</span>
          </button>
        );
      })}
    </div>
  );
}
