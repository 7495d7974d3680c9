/**
 * The model picker's host side (the header's picker, **Toolwire: Select Model**): listing the
 * models (`toolwire/models/list`) and switching (`toolwire/session/setModel` and the
 * `toolwire.model` setting). No `vscode` import.
 */
import type { Result } from "../protocol";
import type { HostMessage } from "./messages";
import { send, type PanelServer, type PanelUi, type Session } from "./ports";

/** What the model picker needs of the panel host. */
export interface ModelsHost {
  readonly server: PanelServer;
  readonly ui: PanelUi;
  post(message: HostMessage): void;
  session(): Session | undefined;
  running(): boolean;
}

/** Sends the webview the models to switch to (`toolwire/models/list`). */
export async function listModels(host: ModelsHost): Promise<void> {
  const listed = await models(host);
  host.post({ type: "models", active: listed.active, models: listed.models });
}

/** The models to switch to (`toolwire/models/list`, for the panel's session if any): the picker's and Select Model's. */
export async function models(host: ModelsHost): Promise<Result<"toolwire/models/list">> {
  const { rpc, generation } = await host.server.connection();
  const current = host.session();
  const session = current !== undefined && current.generation === generation ? current : undefined;
  return send(rpc, "toolwire/models/list", session === undefined ? {} : { sessionId: session.id });
}

/**
 * Switches the model: the open conversation's next turns use it (`toolwire/session/setModel`) and
 * it becomes the `toolwire.model` setting, the model of new conversations. Refused while a turn
 * runs, and for a spec the server cannot use (its words shown): then nothing changes and the
 * picker shows the model in use again.
 */
export async function selectModel(host: ModelsHost, spec: string): Promise<void> {
  const { generation } = await host.server.connection();
  const current = host.session();
  const session = current !== undefined && current.generation === generation ? current : undefined;
  if (session !== undefined) {
    if (host.running()) {
      await listModels(host).catch(() => undefined); // the picker shows the model in use again
      host.ui.error("A turn is running; change the model after it ends.");
      return;
    }
    try {
      const { model } = await send(session.rpc, "toolwire/session/setModel", { sessionId: session.id, model: spec });
      host.post({ type: "sessionModel", model });
    } catch (error) {
      await listModels(host).catch(() => undefined);
      throw error;
    }
  }
  await host.ui.setModel?.(spec);
  host.post({ type: "models", active: spec, models: [] });
  await listModels(host).catch(() => undefined);
}
