/**
 * Follow-the-end: while the transcript is scrolled to (or near) its bottom, each paint keeps it
 * there, so a streamed message's end stays in view; once the person scrolls up, nothing pulls
 * them down again until they scroll back to the bottom. One scroll per paint (a paint is one
 * animation frame at most), never one per streamed piece.
 */

/** Within this many pixels of the bottom counts as "at the bottom". */
export const NEAR_BOTTOM_PX = 48;

export class FollowEnd {
  private following = true;
  private element: HTMLElement | null = null;
  private readonly onScroll = (): void => {
    const el = this.element;
    if (el !== null) {
      this.following = el.scrollHeight - el.scrollTop - el.clientHeight <= NEAR_BOTTOM_PX;
    }
  };

  /** After a render: finds the transcript (it may be new) and, when following, scrolls to its end. */
  afterRender(root: ParentNode): void {
    const el = root.querySelector<HTMLElement>("main.transcript");
    if (el !== this.element) {
      this.element?.removeEventListener("scroll", this.onScroll);
      this.element = el;
      this.following = true;
      el?.addEventListener("scroll", this.onScroll, { passive: true });
    }
    if (el !== null && this.following && el.scrollHeight - el.scrollTop - el.clientHeight > 1) {
      el.scrollTop = el.scrollHeight;
    }
  }
}
