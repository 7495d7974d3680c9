/**
 * The problems an edit introduced, under its card (protocol.md, "Problems after an edit"):
 * a headline (new ones, fixed ones, not checked, may not be final) and one row per new
 * problem, its place a link that opens the file at that line and column. Every text is a
 * language server's or the model's: shown in display form, as text.
 */
import { displayPath, displayText } from "../display";
import type { WebviewMessage } from "../panel/messages";
import { problemsHeadline, type EditProblems } from "../panel/problems";

const ICONS: Record<string, string> = { error: "error", warning: "warning", info: "info", hint: "lightbulb" };

export function Problems({ problems, send }: { problems: EditProblems; send: (message: WebviewMessage) => void }) {
  const headline = displayText(problemsHeadline(problems));
  const icon = !problems.checked ? "circle-slash" : problems.new.length > 0 ? "warning" : "pass";
  return (
    <section class={`problems${problems.checked && problems.new.length > 0 ? " has-new" : ""}`} aria-label="Problems after this edit">
      <div class="problems-head">
        <i class={`codicon codicon-${icon}`} aria-hidden="true" /> {headline}
      </div>
      {problems.checked && problems.new.length > 0 ? (
        <ul class="problem-list">
          {problems.new.map((p, i) => {
            const place = `${displayPath(p.path)}:${p.line}:${p.column}`;
            const origin = [p.source, p.code].filter((part) => part !== null).join(" ");
            return (
              <li key={i} class={`problem ${p.severity}`}>
                <i class={`codicon codicon-${ICONS[p.severity]}`} aria-hidden="true" />{" "}
                <button type="button" class="link place" title={`Open ${place}`} onClick={() => send({ type: "openFile", path: p.path, line: p.line, column: p.column })}>
                  {place}
                </button>{" "}
                <span class="severity">{p.severity}</span>
                {origin ? <span class="origin"> ({displayText(origin)})</span> : null}
                {": "}
                <span class="problem-message">{displayText(p.message)}</span>
              </li>
            );
          })}
        </ul>
      ) : null}
    </section>
  );
}
