// An object's ownership graph: owners above, children below, each node with its garbage
// collection state; a click opens that object.

const SVG = "http://www.w3.org/2000/svg";
const W = 200;
const H = 46;
const GAP_X = 24;
const GAP_Y = 56;

function node(tag, attrs = {}, text) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
  if (text !== undefined) n.textContent = text;
  return n;
}

function clip(text, length) {
  return text.length > length ? `${text.slice(0, length - 1)}…` : text;
}

// What the garbage collector makes of a node, in a few words.
export function gcBadges(n) {
  const badges = [];
  if (n.missing) badges.push(["missing", "owner gone"]);
  if (n.orphan) badges.push(["orphan", "orphan: collected"]);
  if (n.gc.foreground) badges.push(["foreground", "foreground deletion"]);
  if (n.gc.deleting && !n.gc.foreground) badges.push(["deleting", "deleting"]);
  if (n.gc.orphaning) badges.push(["deleting", "orphaning children"]);
  for (const f of n.gc.heldBy || []) badges.push(["held", `held by ${f}`]);
  return badges;
}

export function renderGraph(graph, open) {
  const depth = new Map();
  const root = graph.nodes.find((n) => n.root);
  depth.set(root.id, 0);
  // Owners above (negative), children below (positive), breadth first from the object.
  let changed = true;
  while (changed) {
    changed = false;
    for (const e of graph.edges) {
      if (depth.has(e.to) && !depth.has(e.from)) { depth.set(e.from, depth.get(e.to) - 1); changed = true; }
      if (depth.has(e.from) && !depth.has(e.to) && depth.get(e.from) >= 0) { depth.set(e.to, depth.get(e.from) + 1); changed = true; }
    }
  }
  const levels = new Map();
  for (const n of graph.nodes) {
    const d = depth.get(n.id) ?? 0;
    if (!levels.has(d)) levels.set(d, []);
    levels.get(d).push(n);
  }
  const order = [...levels.keys()].sort((a, b) => a - b);
  const widest = Math.max(...[...levels.values()].map((l) => l.length));
  const width = widest * (W + GAP_X) + GAP_X;
  const height = order.length * (H + GAP_Y) + GAP_Y / 2;
  const place = new Map();
  order.forEach((d, row) => {
    const level = levels.get(d);
    const offset = (width - level.length * (W + GAP_X) + GAP_X) / 2;
    level.forEach((n, i) => place.set(n.id, [offset + i * (W + GAP_X), GAP_Y / 4 + row * (H + GAP_Y)]));
  });
  const canvas = node("svg", { class: "graph", width, height, viewBox: `0 0 ${width} ${height}` });
  const defs = node("defs");
  const marker = node("marker", { id: "graph-arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto" });
  marker.append(node("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "graph-arrowhead" }));
  defs.append(marker);
  canvas.append(defs);
  for (const e of graph.edges) {
    const from = place.get(e.from);
    const to = place.get(e.to);
    if (!from || !to) continue;
    const line = node("path", {
      d: `M ${from[0] + W / 2} ${from[1] + H} L ${to[0] + W / 2} ${to[1]}`,
      class: e.controller ? "graph-edge controller" : "graph-edge",
      "marker-end": "url(#graph-arrow)",
    });
    line.append(node("title", {}, `${e.controller ? "controller" : "owner"}${e.blockOwnerDeletion ? ", blocks the owner's deletion" : ""}`));
    canvas.append(line);
  }
  for (const n of graph.nodes) {
    const [x, y] = place.get(n.id);
    const badges = gcBadges(n);
    const classes = ["graph-node"];
    if (n.root) classes.push("root");
    if (n.missing) classes.push("missing");
    if (n.gc.deleting) classes.push("deleting");
    if (n.orphan) classes.push("orphan");
    const g = node("g", { class: classes.join(" "), transform: `translate(${x},${y})`, "data-kind": n.shortKind, "data-name": n.name });
    g.append(node("rect", { width: W, height: H, rx: 6 }));
    g.append(node("text", { x: 8, y: 16, class: "graph-kind" }, n.shortKind));
    g.append(node("text", { x: 8, y: 33, class: "graph-name" }, clip(n.name, 26)));
    if (badges.length) {
      g.append(node("text", { x: W - 6, y: 16, class: `graph-badge ${badges[0][0]}`, "text-anchor": "end" }, clip(badges.map((b) => b[1]).join(", "), 22)));
    }
    g.append(node("title", {}, [`${n.shortKind} ${n.namespace ? n.namespace + "/" : ""}${n.name}`, ...badges.map((b) => b[1])].join("\n")));
    if (!n.missing && !n.root) {
      g.classList.add("link");
      g.addEventListener("click", () => open(n));
    }
    canvas.append(g);
  }
  return canvas;
}
