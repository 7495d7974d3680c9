/**
 * The chat webview's entry point: one store, one reducer (src/panel/reducer.ts),
 * a render per animation frame at most. Host messages arrive as `message` events;
 * the page answers through `acquireVsCodeApi().postMessage`.
 */
import { render } from "preact";
import type { HostMessage, WebviewMessage } from "../panel/messages";
import { initialState, reduceHostMessage, type PanelState } from "../panel/reducer";
import { App } from "./app";
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

function paint(): void {
  frame = 0;
  render(<App state={state} send={send} />, root);
  keys.focusNew();
}

window.addEventListener("message", (event: MessageEvent<HostMessage>) => {
  const message = event.data;
  if (message === null || typeof message !== "object" || typeof message.type !== "string") {
    return;
  }
  state = reduceHostMessage(state, message);
  if (message.type === "reset" || (message.type === "batch" && message.messages.some((m) => m.type === "reset"))) {
    resyncAsked = false;
  }
  if (state.needsSnapshot && !resyncAsked) {
    resyncAsked = true;
    send({ type: "resync" });
  }
  if (frame === 0) {
    frame = requestAnimationFrame(paint);
  }
});

paint();
send({ type: "ready" });
