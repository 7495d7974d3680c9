/**
 * The turn's plan (protocol.md, "update_plan"): a checklist at the top of the turn, one item
 * per step with its status (a checked box when completed, an arrow for the step in progress)
 * and, for a high-priority step, a mark saying so. The model's text is shown in display form.
 */
import { displayText } from "../display";
import type { PlanEntryWire } from "../protocol";

/** The codicon and the words a screen reader hears for each status. */
const STATUS: Record<PlanEntryWire["status"], { icon: string; words: string }> = {
  completed: { icon: "pass-filled", words: "completed" },
  in_progress: { icon: "arrow-circle-right", words: "in progress" },
  pending: { icon: "circle-large-outline", words: "pending" },
};

export function PlanList({ steps }: { steps: readonly PlanEntryWire[] }) {
  const done = steps.filter((step) => step.status === "completed").length;
  return (
    <section class="plan" aria-label="Plan">
      <div class="plan-head">
        <i class="codicon codicon-checklist" aria-hidden="true" /> Plan <span class="plan-count">{done}/{steps.length}</span>
      </div>
      <ul class="plan-steps">
        {steps.map((step, index) => {
          const { icon, words } = STATUS[step.status];
          return (
            <li key={index} class={`plan-step ${step.status}`} aria-label={`${displayText(step.content)}: ${words}, ${step.priority} priority`}>
              <i class={`codicon codicon-${icon}`} aria-hidden="true" />
              <span class="plan-content">{displayText(step.content)}</span>
              {step.priority === "high" ? <span class="plan-priority">high</span> : null}
            </li>
          );
        })}
      </ul>
    </section>
  );
}
