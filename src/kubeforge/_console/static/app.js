// The console's page: log in, follow the stream, and show the screen the address names:
//   #/objects                      kinds and counts
//   #/kind/<kind>                  a kind's objects (in the namespace chosen)
//   #/object/<kind>/<ns>/<name>    one object ("_" for no namespace)
//   #/timeline[/<object>]          the reconciles (about one object)

import { NotLoggedIn, getJSON, loginFromFragment, openStream } from "./api.js";
import { renderGraph, gcBadges } from "./graph.js";
import { TimelineView, el } from "./timeline.js";

const main = document.getElementById("main");
const status = document.getElementById("status");
const state = { overview: null, namespace: "", route: null, timeline: null, timelineRoot: null };

const link = (href, ...children) => el("a", { href }, ...children);
const kindHref = (key) => `#/kind/${encodeURIComponent(key)}`;
const objectHref = (key, ns, name) => `#/object/${encodeURIComponent(key)}/${encodeURIComponent(ns || "_")}/${encodeURIComponent(name)}`;
const shortKind = (key) => key.split("/").pop();

function debounce(fn, wait) {
  let timer = null;
  return () => {
    clearTimeout(timer);
    timer = setTimeout(fn, wait);
  };
}

// routing ------------------------------------------------------------------------------------

function parseRoute() {
  const parts = window.location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const [screen, ...rest] = parts;
  if (screen === "kind") return { screen: "kind", kind: rest[0] };
  if (screen === "object") return { screen: "object", kind: rest[0], namespace: rest[1] === "_" ? "" : rest[1], name: rest.slice(2).join("/") };
  if (screen === "timeline") return { screen: "timeline", filter: rest.join("/") };
  return { screen: "objects" };
}

async function show() {
  state.route = parseRoute();
  for (const a of document.querySelectorAll("nav a")) {
    const active = a.dataset.screen === (state.route.screen === "timeline" ? "timeline" : "objects");
    a.classList.toggle("active", active);
  }
  try {
    if (state.route.screen === "timeline") return showTimeline(state.route.filter);
    await refreshOverview();
    if (state.route.screen === "kind") return await showKind();
    if (state.route.screen === "object") return await showObject();
    return showObjects();
  } catch (error) {
    failed(error);
  }
}

function failed(error) {
  const message = error instanceof NotLoggedIn ? `${error.message}.` : `Could not load: ${error.message}`;
  main.replaceChildren(el("p", { class: "error" }, message));
}

// objects ------------------------------------------------------------------------------------

async function refreshOverview() {
  state.overview = await getJSON("/api/overview");
  document.title = `${state.overview.title} console`;
}

function countOf(kind) {
  if (!kind.namespaced || !state.namespace) return kind.count;
  return kind.namespaces[state.namespace] || 0;
}

function sidebar() {
  const select = el("select", { id: "namespace", "aria-label": "namespace", onchange: () => { state.namespace = select.value; show(); } },
    el("option", { value: "" }, "all namespaces"),
    state.overview.namespaces.map((ns) => el("option", { value: ns }, ns)));
  select.value = state.namespace;
  const filter = el("input", { type: "search", placeholder: "kind", "aria-label": "filter kinds", class: "kind-filter" });
  const list = el("ul", { class: "kinds" });
  const fill = () => {
    const text = filter.value.trim().toLowerCase();
    list.replaceChildren(...state.overview.kinds
      .filter((k) => !text || k.kind.toLowerCase().includes(text) || k.group.includes(text))
      .filter((k) => text || countOf(k) > 0 || k.group === "" || !k.group.endsWith(".k8s.io"))
      .map((k) => el("li", { class: state.route.kind === k.key ? "current" : "" },
        link(kindHref(k.key), el("span", { class: "kind-name", title: k.key }, k.kind),
          el("span", { class: "count", "data-kind": k.key }, String(countOf(k)))))));
  };
  filter.addEventListener("input", fill);
  fill();
  return el("aside", { class: "sidebar" }, select, filter, list);
}

function showObjects() {
  const kinds = state.overview.kinds.filter((k) => countOf(k) > 0);
  main.replaceChildren(el("div", { class: "split" }, sidebar(), el("section", { class: "content" },
    el("h2", {}, state.namespace ? `Namespace ${state.namespace}` : "All namespaces"),
    el("div", { class: "cards" }, kinds.map((k) => link(kindHref(k.key), el("div", { class: "card" },
      el("div", { class: "card-count" }, String(countOf(k))), el("div", {}, k.kind), el("div", { class: "muted small" }, k.group || "core")))))),
  ));
}

async function showKind() {
  const key = state.route.kind;
  const kind = state.overview.kinds.find((k) => k.key === key);
  const listed = await getJSON("/api/list", { kind: key, namespace: kind && kind.namespaced ? state.namespace : "" });
  const columns = listed.columns.filter((c) => c.priority === 0);
  const positions = columns.map((c) => listed.columns.indexOf(c));
  const namespaced = kind && kind.namespaced && !state.namespace;
  const table = el("table", { class: "objects", "data-kind": key },
    el("thead", {}, el("tr", {}, namespaced ? el("th", {}, "Namespace") : null, columns.map((c) => el("th", { title: c.description }, c.name)))),
    el("tbody", {}, listed.rows.map((row) => el("tr", { "data-name": row.name },
      namespaced ? el("td", {}, row.namespace) : null,
      positions.map((p, i) => el("td", {}, i === 0 ? link(objectHref(key, row.namespace, row.name), String(row.cells[p])) : String(row.cells[p] ?? "")))))));
  main.replaceChildren(el("div", { class: "split" }, sidebar(), el("section", { class: "content" },
    el("h2", {}, shortKind(key), el("span", { class: "muted small" }, ` ${key}`)),
    listed.rows.length ? table : el("p", { class: "muted" }, "None."),
    listed.more ? el("p", { class: "muted" }, "Only the first objects are shown.") : null)));
}

function conditionsTable(conditions) {
  if (!conditions.length) return el("p", { class: "muted" }, "None.");
  return el("table", { class: "objects" },
    el("thead", {}, el("tr", {}, ["Type", "Status", "Reason", "Message", "Last transition"].map((h) => el("th", {}, h)))),
    el("tbody", {}, conditions.map((c) => el("tr", { class: `status-${c.status}` }, [c.type, c.status, c.reason || "", c.message || "", c.lastTransitionTime || ""].map((v) => el("td", {}, v))))));
}

function eventsTable(events) {
  if (!events.length) return el("p", { class: "muted" }, "None.");
  return el("table", { class: "objects" },
    el("thead", {}, el("tr", {}, ["Type", "Reason", "From", "Count", "Last", "Message"].map((h) => el("th", {}, h)))),
    el("tbody", {}, events.map((e) => el("tr", { class: e.type === "Warning" ? "warning" : "" }, [e.type, e.reason, e.from, e.count, e.last, e.message].map((v) => el("td", {}, String(v)))))));
}

function managersTable(entries) {
  return el("details", { class: "managed" }, el("summary", {}, `managedFields: ${entries.length} managers`),
    el("table", { class: "objects" },
      el("thead", {}, el("tr", {}, ["Manager", "Operation", "Subresource", "Time", "Fields"].map((h) => el("th", {}, h)))),
      el("tbody", {}, entries.map((m) => el("tr", {}, [m.manager, m.operation, m.subresource, m.time, m.fields.join(", ")].map((v) => el("td", {}, v)))))));
}

async function showObject() {
  const { kind, namespace, name } = state.route;
  const page = await getJSON("/api/object", { kind, namespace, name });
  const object = namespace ? `${namespace}/${name}` : name;
  const gc = gcBadges({ gc: page.gc });
  main.replaceChildren(el("div", { class: "split" }, sidebar(), el("section", { class: "content object", "data-uid": page.uid },
    el("h2", {}, link(kindHref(kind), shortKind(kind)), ` ${object}`,
      gc.map(([cls, text]) => el("span", { class: `badge ${cls}` }, text))),
    el("p", {}, `resourceVersion ${page.resourceVersion} · `, link(`#/timeline/${encodeURIComponent(object)}`, "its reconciles on the timeline")),
    el("h3", {}, "Ownership"),
    el("div", { class: "graph-box" }, renderGraph(page.graph, (n) => { window.location.hash = objectHref(n.kind, n.namespace, n.name); })),
    el("h3", {}, "Conditions"), conditionsTable(page.conditions),
    el("h3", {}, "Events"), eventsTable(page.events),
    el("h3", {}, "YAML"), managersTable(page.managedFields),
    el("pre", { class: "yaml" }, page.yaml))));
}

// timeline -----------------------------------------------------------------------------------

function timelineView() {
  if (state.timeline === null) {
    state.timelineRoot = el("section", { class: "timeline" });
    state.timeline = new TimelineView(state.timelineRoot, { live: true });
  }
  return state.timeline;
}

function showTimeline(filter) {
  const view = timelineView();
  main.replaceChildren(state.timelineRoot);
  view.setFilter(filter || "");
}

// live ---------------------------------------------------------------------------------------

const refreshCounts = debounce(async () => {
  if (state.route.screen === "timeline") return;
  try {
    await refreshOverview();
    for (const span of document.querySelectorAll(".count[data-kind]")) {
      const kind = state.overview.kinds.find((k) => k.key === span.dataset.kind);
      if (kind) span.textContent = String(countOf(kind));
    }
  } catch (error) {
    /* the next change tries again */
  }
}, 400);
const refreshScreen = debounce(() => show(), 300);

function changed(changes) {
  refreshCounts();
  const route = state.route;
  if (route.screen === "kind" && changes.some((c) => c.kind === route.kind)) refreshScreen();
  if (route.screen === "object") refreshScreen();
  if (route.screen === "objects" && changes.some((c) => c.type !== "MODIFIED")) refreshScreen();
}

async function start() {
  try {
    await loginFromFragment();
  } catch (error) {
    failed(error);
    return;
  }
  window.addEventListener("hashchange", show);
  await show();
  openStream({
    status: (text) => { status.textContent = text; status.className = `status ${text === "live" ? "live" : ""}`; },
    timeline: (doc) => timelineView().reset(doc),
    entries: (entries) => timelineView().update(entries),
    changes: changed,
  });
}

start();
