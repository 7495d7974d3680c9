/**
 * Assistant text rendered as sanitized Markdown, with a copy button on each code block.
 * Streamed text is rendered block by block (BlockSplitter): each completed block is
 * parsed, sanitized and put in the DOM once; only the last, open block re-renders as
 * pieces arrive, so an append costs in proportion to the open block, not the message.
 */
import { Component } from "preact";
import type { WebviewMessage } from "../panel/messages";
import { BlockSplitter, renderMarkdown, showDisplayForm } from "./markdown";

interface Props {
  text: string;
  send: (message: WebviewMessage) => void;
}

type Send = (message: WebviewMessage) => void;

/** Fills `element` with the sanitized HTML of `text`, in display form, with Copy buttons. */
function fill(element: HTMLElement, text: string, send: Send): void {
  element.innerHTML = renderMarkdown(text);
  const blocks = Array.from(element.querySelectorAll("pre")).map((pre) => ({ pre, code: pre.querySelector("code")?.textContent ?? pre.textContent ?? "" }));
  showDisplayForm(element);
  for (const { pre, code } of blocks) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy icon";
    button.setAttribute("aria-label", "Copy code");
    button.title = "Copy code";
    const icon = document.createElement("i");
    icon.className = "codicon codicon-copy";
    icon.setAttribute("aria-hidden", "true");
    button.append(icon);
    button.addEventListener("click", () => send({ type: "copy", text: code }));
    pre.append(button);
  }
}

/** One block of Markdown; re-renders only when its text changes. */
class Block extends Component<{ text: string; send: Send }> {
  private element: HTMLDivElement | null = null;

  override shouldComponentUpdate(next: { text: string }): boolean {
    return next.text !== this.props.text;
  }

  override componentDidMount(): void {
    this.paint();
  }

  override componentDidUpdate(): void {
    this.paint();
  }

  private paint(): void {
    if (this.element !== null) {
      fill(this.element, this.props.text, this.props.send);
    }
  }

  override render() {
    return <div class="md-block" ref={(element) => {
          this.element = element;
        }} />;
  }
}

/** A group of completed blocks; skipped by a render while the group is the same array. */
class Group extends Component<{ blocks: readonly string[]; send: Send }> {
  override shouldComponentUpdate(next: { blocks: readonly string[] }): boolean {
    return next.blocks.length !== this.props.blocks.length;
  }

  override render() {
    return this.props.blocks.map((text, i) => <Block key={i} text={text} send={this.props.send} />);
  }
}

/**
 * Renders only when the text changed; links go to the host (http/https only, checked
 * there too). The text is shown in display form; Copy copies the code as the model wrote it.
 */
export class Markdown extends Component<Props> {
  private readonly splitter = new BlockSplitter();

  override shouldComponentUpdate(next: Props): boolean {
    return next.text !== this.props.text;
  }

  private onClick = (event: MouseEvent): void => {
    const anchor = (event.target as Element | null)?.closest?.("a");
    if (anchor === null || anchor === undefined) {
      return;
    }
    event.preventDefault();
    const href = anchor.getAttribute("href");
    if (href !== null && /^https?:\/\//i.test(href)) {
      this.props.send({ type: "openLink", href });
    }
  };

  override render() {
    const { groups, open } = this.splitter.update(this.props.text);
    const send = this.props.send;
    return (
      <div class="markdown" onClick={this.onClick}>
        {groups.map((blocks, i) => (
          <Group key={i} blocks={blocks} send={send} />
        ))}
        {open.length > 0 ? <Block key="open" text={open} send={send} /> : null}
      </div>
    );
  }
}
