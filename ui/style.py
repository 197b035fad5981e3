"""The app's style over Streamlit's theme: what .streamlit/config.toml cannot set, drawn once on every page.

Needs met for every page at once rather than page by page:
- text that reads: every caption and its code at WCAG AA contrast (4.5:1), on white and on the sidebar's
  grey (Streamlit draws captions at 60% of the text colour: 4.1:1 on the sidebar);
- code that can be read with the keyboard alone: a code block wraps its lines instead of hiding them past
  its right edge, and a block that still scrolls (one given a fixed height) takes the keyboard's focus,
  so its arrow keys scroll it;
- a page a screen reader can follow: one polite live region (`#ac-live`) that reads what a page announces
  (`announce`: after a Step, the new messages and the stop reason), icons hidden from assistive technology
  (Streamlit writes a Material icon in Markdown as an image named "fiber_new icon"), a visible focus ring on links, and, after
  moving to another page, the keyboard's focus on that page's heading rather than at the top of the sidebar.
"""

from __future__ import annotations

import html
import json

import streamlit as st

FOCUS = "#3b5bdb"  # the focus ring: 6.3:1 on white
MUTED = "#555c63"  # grey text: 6.6:1 on white, 6.1:1 on the sidebar's #f5f7fa
CODE = "#0b5040"  # code in a caption: Streamlit's code green, darker
# code highlighting (JSON above all) in colours of at least 5:1 on a code block's #fafbfd; Streamlit's own are
# 2.6-3.6:1. Any kind of token not named here is drawn in the text's own grey.
TOKENS = {
    "": "#343a40",
    "punctuation": "#495057",
    "property": "#005f8a",
    "string": "#0a6b2e",
    "number": "#0b6b5e",
    "boolean": "#7a2fb0",
    "keyword": "#7a2fb0",
    "operator": "#a6400b",
    "comment": MUTED,
}
# st.json draws null on a grey badge in an inline style (#dc322f on #ebebeb, 3.9:1): the same red, darker (6.3:1)
NULL_BADGE = "#a51d1a"
# the key of a message row's menu (ui.messages_view), the message's index after it: the script below names the menu
# and moves the focus into it and out of it
MENU_PREFIX = "row_menu_"
# what scrolls: a code block of fixed height, a container of fixed height (the compare page's columns)
SCROLLERS = ".stCode pre, [data-test-scroll-behavior]"

STYLE = f"""<style>
.stApp [data-testid="stCaptionContainer"] {{ color: {MUTED}; opacity: 1; }}
.stApp [data-testid="stCaptionContainer"] code {{ color: {CODE}; }}
.stApp .stCode pre, .stApp .stCode pre code {{ white-space: pre-wrap !important; overflow-wrap: anywhere; }}
.st-key-agentcore_style {{ display: none; }}
.stApp [data-ac-focus]:focus-visible {{ outline: 2px solid #3b5bdb; }}
.stApp a:focus-visible, .stApp [data-testid="stSidebarNavLink"]:focus-visible {{
  outline: 2px solid {FOCUS}; outline-offset: 2px; border-radius: 2px; }}
.stApp [data-ac-heading]:focus {{ outline: none; }}
.st-key-ac_announce,
[data-testid="stLayoutWrapper"]:has(> .st-key-ac_announce),
[data-testid="stElementContainer"]:has(> .st-key-ac_announce) {{ display: none; }}
#ac-live-host {{ position: absolute; width: 1px; height: 1px; overflow: hidden; }}
.stApp .react-json-view .variable-value div[style*="rgb(235, 235, 235)"] {{ color: {NULL_BADGE} !important; }}
{"".join(f".stApp .stCode .token{'.' + kind if kind else ''} {{ color: {colour}; }}" for kind, colour in TOKENS.items())}
</style>"""

# A block that scrolls is found after each change of the page and put in the tab order (axe-core's
# scrollable-region-focusable): Streamlit gives a code block or a container of fixed height no tabindex.
# Code wraps (the !important: st.code sets `white-space: pre` on its element's own style attribute).
FOCUS_SCRIPT = """<script>
(() => {
  if (window.agentcoreScrollFocus) return;
  window.agentcoreScrollFocus = true;
  const SCROLLERS = __SCROLLERS__;
  // Streamlit hides its widgets' icons; an icon in Markdown (`:material/fiber_new:`) it writes as an image named
  // "fiber_new icon", which a screen reader reads out. Hidden, unless it is all a button or link has for a name.
  const ICONS = 'span[role="img"][aria-label$=" icon"]';
  const MENU = __MENU__, MENUS = `[class*="st-key-${MENU}"]`;
  const messageOf = (menu) => (menu.className.match(new RegExp(`st-key-${MENU}(\\\\d+)`)) || [])[1] ?? null;
  const openMenu = () => document.querySelector(`${MENUS} button[aria-expanded="true"]`);
  let menuFocused = null;  // the menu whose first action was given the focus
  let acted = null;  // the message whose menu's action (one that closes the menu) was clicked
  document.addEventListener("click", (event) => {
    const opener = openMenu();
    const inside = event.target.closest ? event.target.closest('[data-testid="stPopoverBody"]') : null;
    if (opener && inside && event.target.closest("button")) acted = messageOf(opener.closest(MENUS));
    else if (!inside) acted = null;  // a click elsewhere: the person's focus is theirs
  }, true);
  document.addEventListener("keydown", (event) => { if (event.key === "Escape") acted = null; }, true);
  const alone = (icon) => {  // the icon is all the name its button or link has: its other text is icons too
    const owner = icon.closest('button, a, [role="button"], [role="tab"]');
    if (owner === null) return false;
    let rest = owner.textContent;
    for (const i of owner.querySelectorAll('span[role="img"], [data-testid="stIconMaterial"]')) {
      rest = rest.replace(i.textContent, "");
    }
    return rest.trim() === "";
  };
  const scrolls = (el) => el.scrollHeight > el.clientHeight + 1 || el.scrollWidth > el.clientWidth + 1;
  // one live region for the whole app, outside what Streamlit redraws: a screen reader hears each new text once.
  // It sits in a closed shadow root, which the accessibility tree reads and a page's text search does not: the
  // words it repeats are not found twice on the page. window.agentcoreLive reaches it.
  const host = document.createElement("div");
  host.id = "ac-live-host";
  document.body.appendChild(host);
  const root = host.attachShadow({ mode: "closed" });
  const live = document.createElement("div");
  live.id = "ac-live";
  live.setAttribute("role", "status");
  live.setAttribute("aria-live", "polite");
  live.style.cssText = "position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;"
    + "clip:rect(0 0 0 0);white-space:nowrap;border:0";
  root.appendChild(live);
  window.agentcoreLive = live;
  const said = () => {  // the text to announce is an attribute: it is no text of the page
    const el = document.querySelector(".st-key-ac_announce [data-ac-announce]");
    return el ? (el.getAttribute("data-ac-announce") || "").trim() : "";
  };
  let announced = said();  // what the page says as it opens is not news
  let path = location.pathname, newPage = false;
  const mark = () => {
    for (const el of document.querySelectorAll(SCROLLERS)) {
      const focusable = el.hasAttribute("tabindex") && el.getAttribute("tabindex") !== "-1";
      if (scrolls(el) && !focusable) {
        el.setAttribute("tabindex", "0");
        el.setAttribute("data-ac-focus", "");
      } else if (!scrolls(el) && el.hasAttribute("data-ac-focus")) {
        el.removeAttribute("tabindex");
        el.removeAttribute("data-ac-focus");
      }
    }
    for (const icon of document.querySelectorAll(ICONS)) {
      if (icon.getAttribute("aria-hidden") !== "true" && !alone(icon)) icon.setAttribute("aria-hidden", "true");
    }
    // a message's menu is an icon alone ("more_vert icon" to a screen reader): named by what it holds
    for (const menu of document.querySelectorAll(MENUS)) {
      const button = menu.querySelector("button");
      const index = messageOf(menu);
      const name = `Actions on message #${index}`;
      if (button && index && button.getAttribute("aria-label") !== name) button.setAttribute("aria-label", name);
    }
    // and the menu it opens, which Streamlit names by its label as written (":material/more_vert:"). Its actions
    // are drawn once it is open, in a layer at the end of the page: the focus goes to the first, once they are
    // there, as a menu button's does (the next Tab would leave for the next message).
    const opener = openMenu();
    const dialog = opener ? document.querySelector('[data-testid="stPopoverBody"][role="dialog"]') : null;
    if (dialog && opener.hasAttribute("aria-label")) dialog.setAttribute("aria-label", opener.getAttribute("aria-label"));
    const first = dialog ? dialog.querySelector("button, textarea, input") : null;
    if (!opener) menuFocused = null;
    else if (first && menuFocused !== opener) {
      menuFocused = opener;
      if (document.activeElement === opener || document.activeElement === document.body) first.focus();
    }
    // an action of a menu (Edit, Delete) closes it: once the page is drawn again without it, the focus goes to the
    // editor the action opened, or back to the menu (an action that keeps it open, the mock form's, waits)
    const state = document.querySelector('[data-testid="stApp"]')?.getAttribute("data-test-script-state");
    if (acted !== null && !dialog && state === "notRunning") {
      const next = document.querySelector(`.st-key-msg_${acted} textarea`)
        || document.querySelector(`.st-key-${MENU}${acted} button`);
      const active = document.activeElement;  // the page's, or the menu's, which a closing menu gives it back to
      if (next && (active === document.body || active.closest(MENUS))) next.focus();
      acted = null;
    }
    const text = said();
    if (text && text !== announced) {
      announced = text;
      live.textContent = text;
    }
    if (location.pathname !== path) {
      path = location.pathname;
      newPage = true;
    }
    const app = document.querySelector('[data-testid="stApp"]');
    if (newPage && app && app.getAttribute("data-test-script-state") === "notRunning") {
      const heading = document.querySelector('[data-testid="stMain"] h1, [data-testid="stMain"] h2');
      if (heading) {
        newPage = false;
        heading.setAttribute("tabindex", "-1");
        heading.setAttribute("data-ac-heading", "");
        heading.focus();
      }
    }
  };
  let queued = false;
  const later = () => {
    if (!queued) {
      queued = true;
      requestAnimationFrame(() => { queued = false; mark(); });
    }
  };
  // text filled in, a class or style changed, or a width changed can each make a block start or stop scrolling
  const changes = { childList: true, subtree: true, characterData: true,
                    attributeFilter: ["class", "style", "data-test-script-state"] };
  new MutationObserver(later).observe(document.body, changes);
  window.addEventListener("resize", later);
  mark();
})();
</script>""".replace("__SCROLLERS__", json.dumps(SCROLLERS)).replace("__MENU__", json.dumps(MENU_PREFIX))


def apply_style() -> None:
    """Draw the app's style and the script that puts scrolling blocks in the tab order; neither takes any room.

    Both go in one element of the page, hidden: a style alone would go to Streamlit's event container,
    which it may empty on a redraw, and a visible element takes a gap of the page's height.
    """
    with st.container(key="agentcore_style"):
        st.html(STYLE + FOCUS_SCRIPT, unsafe_allow_javascript=True)


def announce(text: str) -> None:
    """Have the live region read `text` once (a screen reader hears it politely, after what it is reading).

    Drawn hidden; the app's script copies it into its one live region when it differs from the last text.
    """
    with st.container(key="ac_announce"):
        st.html(f'<div data-ac-announce="{html.escape(text, quote=True)}"></div>')
