/**
 * The chat webview's entry point: one store, one reducer (src/panel/reducer.ts),
 * a render per animation frame at most. Host messages arrive as `message` events;
 * the page answers through `acquireVsCodeApi().postMessage`.
 */
import { render } from "preact";
import type { HostMessage, WebviewMessage } from "../panel/messages";
import { initialState, reduceHostMessage, type PanelState } from "../panel/reducer";
import { App } from "./app";
import { FollowEnd } from "./follow";
import { ApprovalKeys } from "./keys";

interface VsCodeApi {
  postMessage(message: WebviewMessage): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const root = document.getElementById("root") as HTMLElement;
let state: PanelState = initialState();
let frame = 0;
let resyncAsked = false;

/** Sends a message to the extension host. */
export function send(message: WebviewMessage): void {
  vscode.postMessage(message);
}

const keys = new ApprovalKeys(() => state, send);
const follow = new FollowEnd();

/**
 * Asks the host for a fresh snapshot once (until a reset arrives): after a gap, and after a
 * message the reducer or the view could not take (an update this build does not understand),
 * so one odd message never freezes the panel: it is dropped and the state rebuilt.
 */
function resync(): void {
  if (!resyncAsked) {
    resyncAsked = true;
    send({ type: "resync" });
  }
}

/** The last state that rendered, painted again when a newer one cannot be. */
let painted: PanelState = state;

function paint(): void {
  frame = 0;
  try {
    render(<App state={state} send={send} />, root);
    painted = state;
  } catch (error) {
    console.error("Toolwire panel: cannot show this state", error);
    state = painted;
    render(<App state={state} send={send} />, root);
    resync();
  }
  follow.afterRender(root);
  keys.focusNew();
}

window.addEventListener("message", (event: MessageEvent<HostMessage>) => {
  const message = event.data;
  if (message === null || typeof message !== "object" || typeof message.type !== "string") {
    return;
  }
  try {
    state = reduceHostMessage(state, message);
  } catch (error) {
    console.error(`Toolwire panel: dropped a ${message.type} message it cannot apply`, error);
    resync(); // a reset that cannot be applied is not asked for again
    return;
  }
  if (message.type === "reset" || (message.type === "batch" && Array.isArray(message.messages) && message.messages.some((m) => m?.type === "reset"))) {
    resyncAsked = false;
  }
  if (state.needsSnapshot) {
    resync();
  }
  if (frame === 0) {
    frame = requestAnimationFrame(paint);
  }
});

paint();
send({ type: "ready" });
