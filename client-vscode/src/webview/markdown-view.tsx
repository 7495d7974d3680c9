/** Assistant text rendered as sanitized Markdown, with a copy button on each code block. */
import { Component } from "preact";
import type { WebviewMessage } from "../panel/messages";
import { renderMarkdown, showDisplayForm } from "./markdown";

interface Props {
  text: string;
  send: (message: WebviewMessage) => void;
}

/**
 * Renders only when the text changed; links go to the host (http/https only, checked
 * there too). The text is shown in display form; Copy copies the code as the model wrote it.
 */
export class Markdown extends Component<Props> {
  private element: HTMLDivElement | null = null;

  override shouldComponentUpdate(next: Props): boolean {
    return next.text !== this.props.text;
  }

  override componentDidMount(): void {
    this.fill();
  }

  override componentDidUpdate(): void {
    this.fill();
  }

  private fill(): void {
    const element = this.element;
    if (element === null) {
      return;
    }
    element.innerHTML = renderMarkdown(this.props.text);
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
      button.addEventListener("click", () => this.props.send({ type: "copy", text: code }));
      pre.append(button);
    }
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
    return <div class="markdown" ref={(element) => {
          this.element = element;
        }} onClick={this.onClick} />;
  }
}
