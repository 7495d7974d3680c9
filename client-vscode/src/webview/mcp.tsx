/**
 * MCP servers in the panel (protocol.md, "MCP servers"): one compact line per server of the
 * session under the toolbar (starting, ready, failed with its error, stopped), and the images
 * an MCP tool returned, shown in its card (only as the `data:` URLs of src/panel/images.ts).
 */
import { displayText } from "../display";
import type { ResultImage } from "../panel/images";
import type { McpServerView } from "../panel/reducer";
import { sizeText } from "./rules";

const STATE_ICONS: Record<McpServerView["state"], string> = {
  starting: "loading codicon-modifier-spin",
  ready: "plug",
  failed: "error",
  stopped: "debug-disconnect",
};

/** The session's MCP servers, one line each; nothing when it has none. */
export function McpServersBar({ servers }: { servers: readonly McpServerView[] }) {
  if (servers.length === 0) {
    return null;
  }
  return (
    <ul class="mcp-servers" aria-label="MCP servers">
      {servers.map((server) => (
        <li key={server.name} class={`mcp-server ${server.state}`}>
          <i class={`codicon codicon-${STATE_ICONS[server.state]}`} aria-hidden="true" />
          <span class="mcp-name">{displayText(server.name)}</span>
          <span class="mcp-state">{server.state}</span>
          {server.error !== undefined ? <span class="mcp-error">{displayText(server.error, "\n")}</span> : null}
        </li>
      ))}
    </ul>
  );
}

/** The images of a result, each as returned; one not shown is named with the reason. */
export function ResultImages({ images, tool }: { images: readonly ResultImage[]; tool: string }) {
  return (
    <div class="images">
      {images.map((image, i) => {
        const what = `${displayText(image.mimeType)}, ${sizeText(image.size)}`;
        return image.url === undefined ? (
          <div key={i} class="image-left-out">
            [image {what}: {displayText(image.note ?? "not shown")}]
          </div>
        ) : (
          <img key={i} src={image.url} alt={`Image ${i + 1} from ${displayText(tool)} (${what})`} title={what} />
        );
      })}
    </div>
  );
}
