/**
 * The images of an MCP tool's result, as its `data.content` carries them (protocol.md,
 * "MCP servers": each block in MCP's shape, an image `{"type": "image", "mimeType", "size",
 * "data"?, "note"?}`), read for the card. The result is the server's, but the blocks come
 * from an MCP server: every field is checked here.
 *
 * An image is shown only as a `data:` URL the panel builds itself from the block's
 * `mimeType` and `data`, for a raster type it knows (PNG, JPEG, GIF, WebP) and text that
 * is base64, nothing else (no SVG, no URL a server wrote). The page's
 * Content-Security-Policy allows `data:` images and nothing remote (html.ts).
 * Pure: no `vscode`, no DOM.
 */
import type { CallResult } from "../protocol";

/** One image of a result: its `data:` URL, or why it is not shown. */
export interface ResultImage {
  mimeType: string;
  /** Decoded bytes. */
  size: number;
  /** The `data:` URL to show; absent when it is not shown. */
  url?: string;
  /** Why it is not shown (the server's note, or the panel's). */
  note?: string;
}

/** The image types the panel shows. */
export const SHOWN_IMAGE_TYPES: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** The `data:` URL of an image the panel shows, or `undefined` for any other type or text. */
export function imageUrl(mimeType: string, data: string): string | undefined {
  const type = mimeType.toLowerCase();
  if (!SHOWN_IMAGE_TYPES.has(type) || data.length % 4 !== 0 || !BASE64.test(data)) {
    return undefined;
  }
  return `data:${type};base64,${data}`;
}

/** The image blocks of `data.content`, in order; `[]` when the result has none (or is not that shape). */
export function imagesOf(result: CallResult | undefined): ResultImage[] {
  if (result === undefined || !("data" in result)) {
    return [];
  }
  const blocks = (result.data as { content?: unknown } | null | undefined)?.content;
  if (!Array.isArray(blocks)) {
    return [];
  }
  const images: ResultImage[] = [];
  for (const value of blocks) {
    const block = value as Record<string, unknown> | null;
    if (typeof block !== "object" || block === null || block.type !== "image" || typeof block.mimeType !== "string") {
      continue;
    }
    const size = typeof block.size === "number" && Number.isInteger(block.size) && block.size >= 0 ? block.size : 0;
    const url = typeof block.data === "string" ? imageUrl(block.mimeType, block.data) : undefined;
    const note =
      url !== undefined
        ? undefined
        : typeof block.note === "string" && block.note !== ""
          ? block.note
          : "not shown: the panel shows only PNG, JPEG, GIF and WebP images";
    images.push({ mimeType: block.mimeType, size, ...(url !== undefined ? { url } : {}), ...(note !== undefined ? { note } : {}) });
  }
  return images;
}
