// visibleText(text): the text with each bidirectional control or zero-width character shown as its marker,
// ⟨U+202E⟩ (INVISIBLE_MARKERS, written above from tasks/core/safe_text.py). showInvisibleCharacters(root):
// every text under `root` shown so, now and whenever the page's scripts add or change one (the parser's
// text too, when called at the top of <body>), so that no text can reorder or hide what is around it.
// Scripts, styles and text areas keep their text.
const INVISIBLE_CLASS = "[" + Object.keys(INVISIBLE_MARKERS).join("") + "]";
const INVISIBLE = new RegExp(INVISIBLE_CLASS, "g");
const HAS_INVISIBLE = new RegExp(INVISIBLE_CLASS);
const KEEPS_TEXT = new Set(["SCRIPT", "STYLE", "TEXTAREA"]);

function visibleText(text) {
  if (text === null || text === undefined) return "";
  return String(text).replace(INVISIBLE, (character) => INVISIBLE_MARKERS[character]);
}

function showInvisibleCharacters(root) {
  function showText(node) {
    const parent = node.parentNode;
    if (parent && !KEEPS_TEXT.has(parent.nodeName) && HAS_INVISIBLE.test(node.data)) {
      node.data = visibleText(node.data);
    }
  }
  function showUnder(node) {
    if (node.nodeType === Node.TEXT_NODE) return showText(node);
    if (node.nodeType !== Node.ELEMENT_NODE || KEEPS_TEXT.has(node.nodeName)) return;
    const texts = document.createTreeWalker(node, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
      acceptNode: (found) => found.nodeType === Node.TEXT_NODE ? NodeFilter.FILTER_ACCEPT
        : KEEPS_TEXT.has(found.nodeName) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_SKIP,
    });
    for (let text = texts.nextNode(); text; text = texts.nextNode()) showText(text);
  }
  new MutationObserver((records) => {
    for (const record of records) {
      if (record.type === "characterData") showText(record.target);
      else record.addedNodes.forEach(showUnder);
    }
  }).observe(root, {childList: true, characterData: true, subtree: true});
  showUnder(root);
  document.title = visibleText(document.title);
}
