// The timeline: one lane per controller, a bar per reconcile, arrows from the write (or the
// change another client made) to the reconciles it woke. Self-contained (no imports), so a
// test report can inline it in one HTML file.
//
//   const view = new TimelineView(element, { live: true });
//   view.reset(document);      // {entries, now, startedAt} as /api/timeline gives it
//   view.update(entries);      // entries added or changed
//   view.setFilter("default/hello");

const SVG = "http://www.w3.org/2000/svg";
const LANE = 30;
const PAD = 12;
const CHANGES = "changes by others";
const AXIS = 16;
const STEPS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

// An element with attributes (`onclick`: a listener) and children (text is text, never
// markup: names come from the cluster); arrays of children are flattened.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs = {}, title) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (title) {
    const t = document.createElementNS(SVG, "title");
    t.textContent = title;
    node.append(t);
  }
  return node;
}

function objectName(namespace, name) {
  return namespace ? `${namespace}/${name}` : name;
}

function shortKind(kind) {
  return (kind || "").split("/").pop();
}

function ms(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  return seconds < 1 ? `${(seconds * 1000).toFixed(1)} ms` : `${seconds.toFixed(2)} s`;
}

function laneOf(entry) {
  if (entry.type === "change") return CHANGES;
  return entry.manager ? `${entry.manager} / ${entry.controller}` : entry.controller;
}

// The objects an entry is about: what it reconciled, what woke it, what it wrote.
function objectsOf(entry) {
  if (entry.type === "change") return [objectName(entry.namespace, entry.name)];
  const found = [objectName(entry.namespace, entry.name)];
  for (const t of entry.triggers || []) if (t.name) found.push(objectName(t.namespace, t.name));
  for (const w of entry.writes || []) found.push(objectName(w.namespace, w.name));
  return found;
}

export class TimelineView {
  constructor(root, { live = true } = {}) {
    this.root = root;
    this.live = live;
    this.entries = new Map();
    this.filter = "";
    this.scale = null; // pixels per second; null: fit everything
    this.follow = live;
    this.selected = null;
    this.now = 0;
    this.pending = false;
    this.build();
  }

  build() {
    this.filterInput = el("input", {
      type: "search",
      class: "tl-filter",
      placeholder: "filter by object: namespace/name",
      "aria-label": "filter by object",
      oninput: () => this.setFilter(this.filterInput.value.trim()),
    });
    const zoom = (factor) => () => {
      this.scale = (this.scale || this.fitScale()) * factor;
      this.schedule();
    };
    const fit = el("button", { type: "button", onclick: () => { this.scale = null; this.schedule(); } }, "fit");
    this.followBox = el("input", { type: "checkbox", onchange: () => { this.follow = this.followBox.checked; } });
    this.followBox.checked = this.follow;
    this.summary = el("div", { class: "tl-summary" });
    const controls = el(
      "div",
      { class: "tl-controls" },
      this.filterInput,
      el("button", { type: "button", onclick: zoom(0.5), title: "zoom out" }, "−"),
      el("button", { type: "button", onclick: zoom(2), title: "zoom in" }, "+"),
      fit,
      this.live ? el("label", {}, this.followBox, " follow") : null,
      this.summary,
    );
    this.labels = el("div", { class: "tl-labels" });
    this.canvas = svg("svg", { class: "tl-canvas" });
    this.scroller = el("div", { class: "tl-scroller" }, this.canvas);
    this.details = el("div", { class: "tl-details" }, el("p", { class: "muted" }, "Click a reconcile to see what it did."));
    this.root.replaceChildren(
      controls,
      el("div", { class: "tl-body" }, this.labels, this.scroller),
      this.details,
    );
  }

  reset(doc) {
    this.entries = new Map();
    this.startedAt = doc.startedAt;
    this.update(doc.entries || [], doc.now);
  }

  update(entries, now) {
    for (const entry of entries) this.entries.set(entry.seq, entry);
    for (const entry of entries) {
      this.now = Math.max(this.now, entry.end ?? entry.start ?? entry.t ?? 0);
    }
    if (now !== undefined) this.now = Math.max(this.now, now);
    this.schedule();
  }

  setFilter(text) {
    this.filter = text;
    if (this.filterInput.value.trim() !== text) this.filterInput.value = text;
    this.schedule();
  }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.render();
    });
  }

  matches(entry) {
    if (!this.filter) return true;
    return objectsOf(entry).some((o) => o === this.filter || o.endsWith(`/${this.filter}`));
  }

  // Pixels per second that show every entry kept in the visible width.
  fitScale() {
    const width = Math.max(this.scroller.clientWidth - 6 * PAD, 200);
    const entries = [...this.entries.values()];
    const first = Math.min(...entries.map((e) => e.queued ?? e.start ?? e.t ?? 0), this.now);
    const last = Math.max(...entries.map((e) => e.end ?? e.start ?? e.t ?? 0), first);
    return Math.max(width / Math.max(last - first, 0.05), 0.01);
  }

  render() {
    const all = [...this.entries.values()];
    const shown = all.filter((e) => this.matches(e) && !(e.type === "change" && e.by));
    const lanes = [];
    const laneIndex = new Map();
    const ensure = (name) => {
      if (!laneIndex.has(name)) {
        laneIndex.set(name, lanes.length);
        lanes.push(name);
      }
      return laneIndex.get(name);
    };
    if (shown.some((e) => e.type === "change")) ensure(CHANGES);
    for (const entry of shown) ensure(laneOf(entry));
    const first = Math.min(...shown.map((e) => e.queued ?? e.start ?? e.t ?? 0), this.now);
    const scale = this.scale || this.fitScale();
    const x = (t) => PAD + (t - first) * scale;
    const y = (name) => laneIndex.get(name) * LANE + LANE / 2;
    // As wide as the last entry (a reconcile still running reaches to now).
    const last = Math.max(...shown.map((e) => (e.type === "reconcile" && e.end === null ? this.now : e.end ?? e.t ?? 0)), first);
    const width = Math.max(x(last) + PAD * 4, this.scroller.clientWidth);
    const lanesHeight = Math.max(lanes.length * LANE, LANE);
    const height = lanesHeight + AXIS;
    this.canvas.setAttribute("width", width);
    this.canvas.setAttribute("height", height);
    const defs = svg("defs");
    const marker = svg("marker", { id: "tl-arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "tl-arrowhead" }));
    defs.append(marker);
    const layers = { lanes: svg("g"), waits: svg("g"), bars: svg("g"), arrows: svg("g") };
    lanes.forEach((name, i) => {
      layers.lanes.append(svg("rect", { x: 0, y: i * LANE, width, height: LANE, class: i % 2 ? "tl-lane odd" : "tl-lane" }));
    });
    // Seconds since the console started, at a step that leaves room for the labels.
    const step = STEPS.find((s) => s * scale >= 70) || STEPS[STEPS.length - 1];
    for (let t = Math.ceil(first / step) * step; x(t) < width; t += step) {
      layers.lanes.append(svg("line", { x1: x(t), x2: x(t), y1: 0, y2: lanesHeight, class: "tl-tick" }));
      const label = svg("text", { x: x(t), y: lanesHeight + 12, class: "tl-axis", "text-anchor": "middle" });
      label.textContent = `${+t.toFixed(3)} s`;
      layers.lanes.append(label);
    }
    // Where each entry sits, for the arrows: a write's tick or a change's dot.
    const anchors = new Map();
    for (const entry of shown) {
      const lane = laneOf(entry);
      if (entry.type === "change") {
        const cx = x(entry.t);
        const dot = svg("circle", { cx, cy: y(lane), r: 4, class: `tl-change ev-${entry.event}`, "data-seq": entry.seq }, `${entry.event} ${shortKind(entry.kind)} ${objectName(entry.namespace, entry.name)} rv ${entry.rv} by ${entry.manager || "?"}`);
        layers.bars.append(dot);
        anchors.set(`c${entry.seq}`, [cx, y(lane)]);
        continue;
      }
      const start = x(entry.start);
      const end = x(entry.end ?? this.now);
      const classes = ["tl-bar", `outcome-${entry.outcome || "running"}`];
      if (entry.hot) classes.push("hot");
      if (entry.conflict) classes.push("conflict");
      if (this.selected === entry.seq) classes.push("selected");
      if (entry.queued !== null && entry.queued !== undefined && entry.wait > 0) {
        layers.waits.append(svg("line", { x1: x(entry.queued), x2: start, y1: y(lane), y2: y(lane), class: "tl-wait" }, `queued ${ms(entry.wait)}`));
      }
      const bar = svg("rect", {
        x: start, y: y(lane) - 8, width: Math.max(end - start, 3), height: 16, rx: 2,
        class: classes.join(" "), "data-seq": entry.seq, "data-object": objectName(entry.namespace, entry.name),
        "data-wrote": (entry.writes || []).map((w) => `${shortKind(w.kind)} ${objectName(w.namespace, w.name)}`).join("; "),
      }, `${entry.controller} ${objectName(entry.namespace, entry.name)}: ${entry.outcome || "running"}, ${ms(entry.seconds)}`);
      bar.addEventListener("click", () => this.select(entry.seq));
      layers.bars.append(bar);
      (entry.writes || []).forEach((w, i) => {
        const wx = Math.min(Math.max(x(w.t), start), start + Math.max(end - start, 3));
        const cls = w.code === 409 ? "tl-write conflict" : w.error ? "tl-write failed" : "tl-write";
        layers.bars.append(svg("line", { x1: wx, x2: wx, y1: y(lane) - 11, y2: y(lane) + 11, class: cls }, `${w.verb} ${shortKind(w.kind)} ${objectName(w.namespace, w.name)} → ${w.code} rv ${w.rv || "–"} (${w.manager || "no field manager"})`));
        anchors.set(`w${entry.seq}.${i}`, [wx, y(lane) + 8]);
      });
    }
    for (const entry of shown) {
      if (entry.type !== "reconcile") continue;
      const tx = x(entry.start);
      const ty = y(laneOf(entry));
      for (const trigger of entry.triggers || []) {
        const from = trigger.from;
        if (!from) continue;
        const source = from.change !== undefined ? anchors.get(`c${from.change}`) : anchors.get(`w${from.reconcile}.${from.write}`);
        if (!source) continue;
        const [sx, sy] = source;
        const bend = Math.max(Math.abs(tx - sx) / 2, 12);
        const selected = this.selected === entry.seq || this.selected === from.reconcile;
        layers.arrows.append(svg("path", {
          d: `M ${sx} ${sy} C ${sx + bend} ${sy}, ${tx - bend} ${ty}, ${tx} ${ty}`,
          class: selected ? "tl-link selected" : "tl-link", "marker-end": "url(#tl-arrow)",
        }));
      }
    }
    this.canvas.replaceChildren(defs, layers.lanes, layers.waits, layers.arrows, layers.bars);
    this.labels.replaceChildren(...lanes.map((name) => el("div", { class: "tl-label", title: name }, name)));
    this.labels.style.height = `${lanesHeight}px`;
    this.renderSummary(all);
    if (this.follow) this.scroller.scrollLeft = this.scroller.scrollWidth;
    if (this.selected !== null) this.renderDetails(this.entries.get(this.selected));
  }

  renderSummary(all) {
    const reconciles = all.filter((e) => e.type === "reconcile");
    const hot = new Map();
    for (const e of reconciles) if (e.hot) hot.set(`${e.controller} ${objectName(e.namespace, e.name)}`, objectName(e.namespace, e.name));
    const conflicts = reconciles.filter((e) => e.conflict).length;
    const chips = [el("span", { class: "chip" }, `${reconciles.length} reconciles`)];
    if (conflicts) chips.push(el("span", { class: "chip conflict", title: "reconciles with a write refused 409 Conflict" }, `${conflicts} with 409s`));
    for (const [label, object] of hot) {
      chips.push(el("button", { type: "button", class: "chip hot", title: "reconciled again and again with writes: filter on it", onclick: () => this.setFilter(object) }, `hot loop: ${label}`));
    }
    this.summary.replaceChildren(...chips);
  }

  select(seq) {
    this.selected = seq;
    this.schedule();
  }

  renderDetails(entry) {
    if (!entry) return;
    const rows = (items, cells) => el("table", { class: "tl-table" }, ...items.map((item) => el("tr", {}, ...cells(item).map((c) => el("td", {}, c)))));
    const trigger = (t) => {
      if (t.cause !== "event") return t.cause;
      const from = t.from ? (t.from.change !== undefined ? ` (a change: ${this.describeChange(t.from.change)})` : ` (a write of ${this.describeReconcile(t.from.reconcile)})`) : "";
      return `${t.event} ${shortKind(t.kind)} ${objectName(t.namespace, t.name)} rv ${t.rv}${from}`;
    };
    const object = objectName(entry.namespace, entry.name);
    const parts = [
      el("h3", {}, `${entry.controller}: ${shortKind(entry.kind)} ${object}`, " ",
        el("button", { type: "button", class: "link", onclick: () => this.setFilter(object) }, "everything about this object")),
      el("p", {},
        `outcome ${entry.outcome || "running"}`,
        entry.error ? ` (${entry.error})` : "",
        entry.requeue_after ? `, again in ${entry.requeue_after} s` : "",
        ` · queued ${ms(entry.wait)} · ran ${ms(entry.seconds)}`,
        entry.hot ? " · hot loop" : "", entry.conflict ? " · 409 Conflict" : ""),
      el("h4", {}, "Woken by"),
      rows(entry.triggers || [], (t) => [trigger(t)]),
      el("h4", {}, `Reads (${(entry.reads || []).length})`),
      rows(entry.reads || [], (r) => [r.source, r.verb, `${shortKind(r.kind)} ${r.name ? objectName(r.namespace, r.name) : r.namespace || "(all)"}`, r.error || `${r.found} found ${r.rvs.length ? "rv " + r.rvs.join(", ") : ""}`]),
      el("h4", {}, `Writes (${(entry.writes || []).length})`),
      rows(entry.writes || [], (w) => [w.verb, `${shortKind(w.kind)} ${objectName(w.namespace, w.name)}`, String(w.code), w.error || `rv ${w.rv || "–"}`, w.manager || ""]),
      entry.more_steps ? el("p", { class: "muted" }, `… and ${entry.more_steps} more requests`) : null,
    ];
    this.details.replaceChildren(...parts.filter((p) => p !== null));
  }

  describeReconcile(seq) {
    const e = this.entries.get(seq);
    return e ? `${e.controller} ${objectName(e.namespace, e.name)}` : "an earlier reconcile";
  }

  describeChange(seq) {
    const e = this.entries.get(seq);
    return e ? `${e.event} by ${e.manager || "?"}` : "no longer kept";
  }
}
