// apexmem explorer: a read-only page over the HTTP API (/v1). The token is kept in this
// tab's sessionStorage and sent in the Authorization header only; the URL's fragment holds
// what is shown (entity, hops, times), never the token.
"use strict";

(function () {
  const MAX_ROWS = 500;
  const COLOURS = { semantic: "#1f77b4", temporal: "#2ca02c", causal: "#d62728", entity: "#9467bd" };
  const state = { entity: null, type: null, hops: 2, known: null, valid: null, faded: false, steps: [], positions: [], slot: null };
  const $ = (id) => document.getElementById(id);
  const explorer = { state: state, graph: null };
  window.apexmem = explorer;

  // ---- the API ------------------------------------------------------------------------

  function base() {
    const tenant = sessionStorage.getItem("apexmem.tenant");
    return tenant ? "/v1/tenants/" + encodeURIComponent(tenant) : "/v1";
  }

  async function api(path, params) {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(params || {})) {
      if (value !== null && value !== undefined && value !== "") query.append(name, value);
    }
    const response = await fetch(base() + path + "?" + query.toString(), {
      headers: { Authorization: "Bearer " + sessionStorage.getItem("apexmem.token") },
      cache: "no-store",
      referrerPolicy: "no-referrer",
    });
    const body = await response.json().catch(() => ({}));
    if (response.status === 401) {
      showLogin("the token was refused: " + (body.detail || response.status));
      throw new Error("unauthorized");
    }
    if (!response.ok) throw new Error(body.detail || body.title || "HTTP " + response.status);
    return body;
  }

  function times() {
    return { known_at: state.known, valid_at: state.valid };
  }

  // ---- small DOM helpers --------------------------------------------------------------

  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function link(text, onClick) {
    const button = el("button", text, "link");
    button.type = "button";
    button.addEventListener("click", onClick);
    return button;
  }

  function row(cells) {
    const tr = document.createElement("tr");
    for (const cell of cells) {
      const td = document.createElement("td");
      if (cell instanceof Node) td.appendChild(cell);
      else td.textContent = cell === null || cell === undefined ? "" : String(cell);
      tr.appendChild(td);
    }
    return tr;
  }

  function when(iso) {
    return iso ? iso.replace("T", " ").replace(/(\.\d+)?(Z|\+00:00)$/, "") : "";
  }

  function say(text, error) {
    $("status").textContent = text;
    $("status").className = error ? "error" : "";
  }

  async function guarded(work) {
    try {
      await work();
    } catch (e) {
      if (e.message !== "unauthorized") say(e.message, true);
    }
  }

  // ---- where we are (the fragment) ----------------------------------------------------

  function writeHash() {
    const parts = new URLSearchParams();
    if (state.entity) parts.set("entity", state.entity);
    if (state.type) parts.set("type", state.type);
    parts.set("hops", String(state.hops));
    if (state.known) parts.set("known", state.known);
    if (state.valid) parts.set("valid", state.valid);
    if (state.faded) parts.set("faded", "1");
    const hash = "#" + parts.toString();
    if (location.hash !== hash) history.pushState(null, "", hash);
  }

  function readHash() {
    const parts = new URLSearchParams(location.hash.slice(1));
    state.entity = parts.get("entity");
    state.type = parts.get("type");
    state.hops = Number(parts.get("hops") || 2);
    state.known = parts.get("known");
    state.valid = parts.get("valid");
    state.faded = parts.get("faded") === "1";
    $("faded").checked = state.faded;
    $("hops").value = String(state.hops);
    $("valid-at").value = state.valid ? state.valid.replace(/Z$/, "").slice(0, 19) : "";
  }

  // ---- search -------------------------------------------------------------------------

  async function search(text) {
    const found = await api("/entities", { query: text || null, known_at: state.known, limit: 50 });
    const list = $("results");
    list.replaceChildren();
    for (const entity of found.entities) {
      const item = el("li");
      item.appendChild(link(entity.name, () => go(entity.name, entity.entity_type)));
      const aka = entity.aliases.length ? "; also " + entity.aliases.join(", ") : "";
      item.appendChild(el("span", " (" + entity.entity_type + aka + ")"));
      list.appendChild(item);
    }
    if (!found.entities.length) list.appendChild(el("li", "no entity named " + (text || "anything")));
  }

  // ---- the entity page ----------------------------------------------------------------

  function go(name, type) {
    state.entity = name;
    state.type = type || null;
    writeHash();
    guarded(show);
  }

  async function show() {
    if (!state.entity) return;
    $("entity").hidden = false;
    $("entity-name").textContent = state.entity + (state.type ? " (" + state.type + ")" : "");
    say("loading " + state.entity + " ...");
    const faded = state.faded ? "true" : null;
    const asked = { entity: state.entity, entity_type: state.type, ...times() };
    const [facts, believed, graph, history] = await Promise.all([
      api("/facts", { ...asked, include_faded: faded }),
      state.faded ? api("/facts", asked) : null,
      api("/traverse", { start: state.entity, max_hops: state.hops, ...times(), include_faded: faded }),
      api("/history", { entity: state.entity, entity_type: state.type }),
    ]);
    const unfaded = believed ? new Set(believed.facts.map((f) => f.fact_id + ":" + f.position)) : null;
    showFacts(facts.facts, unfaded);
    drawGraph(graph);
    setSteps(history.events);
    showHistory("History of " + state.entity, history.events);
    say(describeMoment());
  }

  function describeMoment() {
    const known = state.known ? "as known at " + when(state.known) : "as known now";
    const valid = state.valid ? ", valid at " + when(state.valid) : state.known ? ", valid then" : ", valid now";
    return state.entity + ": " + known + valid;
  }

  function showFacts(facts, unfaded) {
    const body = $("facts").tBodies[0];
    body.replaceChildren();
    for (const fact of facts) {
      const object = fact.object_id && fact.object
        ? link(fact.object, () => go(fact.object, null))
        : fact.object;
      const subject = fact.subject === state.entity ? fact.subject : link(fact.subject, () => go(fact.subject, null));
      const actions = el("span");
      actions.appendChild(link("timeline", () => guarded(() => showTimeline(fact.subject, fact.relation))));
      actions.appendChild(el("span", " "));
      actions.appendChild(link("history", () => guarded(() => factHistory(fact))));
      const faded = unfaded && !unfaded.has(fact.fact_id + ":" + fact.position);
      const episode = link(fact.episode || "(none)", () => guarded(() => selectFact(fact)));
      episode.classList.add("episode");
      const tr = row([subject, fact.relation, object, fact.edge_type,
        fact.confidence.toFixed(2) + (faded ? " (faded)" : ""), when(fact.valid_from),
        when(fact.valid_until), when(fact.recorded_at), fact.actor, episode, fact.position, actions]);
      tr.dataset.factId = fact.fact_id;
      tr.className = faded ? "fact faded" : "fact";
      body.appendChild(tr);
    }
    if (!facts.length) {
      body.appendChild(row(["no facts at this moment (facts whose confidence decayed under 0.1 are left " +
        "out: tick \"faded facts\", or move the known-at slider back to see them as they were then)"]));
      body.lastChild.firstChild.colSpan = 12;
    }
  }

  function drawGraph(subgraph) {
    const ids = new Set(subgraph.entities.map((e) => e.entity_id));
    const nodes = subgraph.entities.map((e) => ({
      data: { id: e.entity_id, label: e.name, type: e.entity_type, hops: e.hops },
      classes: e.hops === 0 ? "start" : "",
    }));
    const edges = subgraph.facts
      .filter((f) => f.object_id && ids.has(f.subject_id) && ids.has(f.object_id))
      .map((f) => ({
        data: { id: f.fact_id + ":" + f.position, source: f.subject_id, target: f.object_id,
          label: f.relation, edge_type: f.edge_type, fact: f },
      }));
    if (explorer.graph) explorer.graph.destroy();
    explorer.graph = cytoscape({
      container: $("graph"),
      elements: { nodes: nodes, edges: edges },
      layout: { name: nodes.length > 1 ? "cose" : "grid", animate: false, randomize: false },
      style: [
        { selector: "node", style: { label: "data(label)", "background-color": "#90a4ae",
          "font-size": 11, "text-valign": "bottom", "text-margin-y": 4 } },
        { selector: "node.start", style: { "background-color": "#ff8f00", "border-width": 2 } },
        { selector: "edge", style: { label: "data(label)", "font-size": 9, "curve-style": "bezier",
          "target-arrow-shape": "triangle", width: 2, "text-rotation": "autorotate" } },
        ...Object.entries(COLOURS).map(([type, colour]) => ({
          selector: 'edge[edge_type = "' + type + '"]',
          style: { "line-color": colour, "target-arrow-color": colour },
        })),
      ],
    });
    explorer.graph.on("tap", "edge", (event) => {
      guarded(() => selectFact(event.target.data("fact")));
    });
    explorer.graph.on("tap", "node", (event) => {
      const node = event.target;
      if (!node.hasClass("start")) go(node.data("label"), node.data("type"));
    });
  }

  // ---- timeline (bitemporal picture) --------------------------------------------------

  async function showTimeline(subject, relation) {
    const found = await api("/timeline", { subject: subject, relation: relation, ...times() });
    state.slot = { subject: subject, relation: relation };
    $("timeline").hidden = false;
    $("timeline-title").textContent = "Timeline of " + subject + " " + relation;
    const parsed = new DOMParser().parseFromString(found.svg, "image/svg+xml");
    const svg = document.importNode(parsed.documentElement, true);
    for (const bar of svg.querySelectorAll("g.version")) {
      bar.addEventListener("click", () => guarded(() =>
        factHistory({ fact_id: bar.getAttribute("data-fact-id"), subject: subject, relation: relation })));
    }
    $("timeline-svg").replaceChildren(svg);
  }

  // ---- a fact, its episode and the evidence it was learned from -------------------------

  async function selectFact(fact) {
    await Promise.all([showEvidence(fact), showLinks(fact), factHistory(fact)]);
    $("evidence").scrollIntoView();
  }

  async function showEvidence(fact) {
    $("evidence").hidden = false;
    $("evidence-title").textContent = "Fact: " + (fact.fact || fact.subject + " " + fact.relation + " " + (fact.object || ""));
    const facts = $("evidence-fact");
    facts.replaceChildren();
    const shown = [["fact id", fact.fact_id], ["log position", fact.position], ["actor", fact.actor],
      ["episode", fact.episode], ["ref", fact.ref], ["standing", fact.standing],
      ["confidence", fact.confidence], ["valid", when(fact.valid_from) + " to " + (when(fact.valid_until) || "open")],
      ["known since", when(fact.recorded_at)], ["supersedes", fact.supersedes]];
    for (const [name, value] of shown) {
      facts.appendChild(el("dt", name));
      facts.appendChild(el("dd", value === null || value === undefined || value === "" ? "-" : value));
    }
    const body = $("episode-table").tBodies[0];
    body.replaceChildren();
    if (!fact.episode) {
      $("episode-title").textContent = "Episode";
      $("episode-note").textContent = "told without an episode: no conversation to show";
      return;
    }
    const found = await api("/episode", { conversation: fact.episode, known_at: state.known });
    const messages = found.events.filter((e) => e.tag.startsWith("message-"));
    $("episode-title").textContent = "Episode " + found.conversation + " (" + messages.length + " messages)";
    $("episode-note").textContent = "stream " + found.stream_id +
      (fact.ref ? "; the highlighted message is the one the fact was learned from (ref " + fact.ref + ")" : "");
    for (const event of found.events.slice(-MAX_ROWS)) {
      const data = event.data || {};
      const chain = el("span", event.chain.slice(0, 16) + "...");
      chain.title = event.chain;
      const tr = row([event.position, when(event.recorded_at), event.tag, data.speaker,
        when(data.at), data.ref, data.text || summary(data), chain]);
      tr.children[7].className = "hash";
      if (fact.ref && data.ref === fact.ref) tr.className = "evidence";
      body.appendChild(tr);
    }
  }

  async function showLinks(fact) {
    // The fact's own links both ways (told, or made by recalls together), and the facts they reach.
    const found = await api("/fact-graph", { fact: fact.fact_id, known_at: state.known });
    const facts = new Map(found.facts.map((f) => [f.fact_id, f]));
    const list = $("linked-facts");
    list.replaceChildren();
    for (const linked of found.links) {
      const out = linked.source === fact.fact_id;
      const other = facts.get(out ? linked.target : linked.source);
      if (!other || (linked.source !== fact.fact_id && linked.target !== fact.fact_id)) continue;
      const item = el("li", null, "linked");
      item.appendChild(el("span", (out ? "-> " : "<- ") + linked.link_type + " (" +
        linked.strength.toFixed(2) + ", " + linked.origin + ", position " + linked.position + ") "));
      item.appendChild(link(other.fact, () => guarded(() => selectFact(other))));
      list.appendChild(item);
    }
    if (!list.children.length) list.appendChild(el("li", "no links to other facts"));
  }

  // ---- history ------------------------------------------------------------------------

  async function factHistory(fact) {
    const found = await api("/history", { fact: fact.fact_id });
    showHistory("History of " + fact.subject + " " + fact.relation + " (fact " + fact.fact_id + ")", found.events);
    $("history").scrollIntoView();
  }

  function showHistory(title, events) {
    $("history").hidden = false;
    const shown = events.slice(-MAX_ROWS);
    $("history-title").textContent = title +
      (shown.length < events.length ? " (the last " + MAX_ROWS + " of " + events.length + " events)" : "");
    const body = $("history-table").tBodies[0];
    body.replaceChildren();
    for (const event of shown) {
      const chain = el("span", event.chain.slice(0, 16) + "...");
      chain.title = event.chain;
      const data = el("span", summary(event.data));
      data.title = JSON.stringify(event.data);
      const cause = el("span", clip(event.cause, 24));
      cause.title = event.cause || "";
      body.appendChild(row([event.position, when(event.recorded_at), event.tag, event.actor,
        event.episode, cause, event.stream_id.slice(0, 8) + " v" + event.version, chain, data]));
      body.lastChild.children[7].className = "hash";
      body.lastChild.children[8].className = "data";
    }
  }

  function clip(text, size) {
    return text && text.length > size ? text.slice(0, size - 3) + "..." : text || "";
  }

  function summary(data) {
    // One line for an event's payload (the whole of it is the cell's tooltip).
    if (!data || typeof data !== "object") return String(data);
    const said = data.fact || data.text || data.alias || data.name || data.reason || "";
    const extra = ["outcome", "valid_from", "valid_until", "confidence"]
      .filter((k) => data[k] !== undefined && data[k] !== null)
      .map((k) => k + " " + (typeof data[k] === "string" ? when(data[k]) : data[k]));
    return [said, ...extra].filter(Boolean).join("; ");
  }

  // ---- time: the known-at slider and the valid-at picker -------------------------------

  function setSteps(events) {
    // The moments the entity changed, and now: each step reopens every view as known then.
    const last = new Map();
    for (const e of events) last.set(e.recorded_at, Math.max(last.get(e.recorded_at) || 0, e.position));
    if (state.known && !last.has(state.known)) last.set(state.known, null);
    state.steps = [...last.keys()].sort((a, b) => Date.parse(a) - Date.parse(b));
    state.positions = state.steps.map((at) => last.get(at));
    const slider = $("known-slider");
    slider.max = String(state.steps.length);
    slider.value = String(state.known ? state.steps.indexOf(state.known) : state.steps.length);
    knownLabel();
  }

  function knownLabel() {
    const index = state.steps.indexOf(state.known);
    const position = index >= 0 ? state.positions[index] : null;
    $("known-label").textContent = !state.known ? "now"
      : when(state.known) + (position ? " (up to event " + position + ")" : "");
  }

  function moveKnown() {
    const index = Number($("known-slider").value);
    state.known = index >= state.steps.length ? null : state.steps[index];
    knownLabel();
    refresh();
  }

  function moveValid() {
    const value = $("valid-at").value;
    state.valid = value ? (value.length === 16 ? value + ":00" : value) + "Z" : null;
    refresh();
  }

  function refresh() {
    writeHash();
    guarded(async () => {
      await show();
      if (state.slot) await showTimeline(state.slot.subject, state.slot.relation);
      await search($("search").value.trim());
      if ($("recall-query").value) await recall($("recall-query").value);
    });
  }

  // ---- recall -------------------------------------------------------------------------

  async function recall(text) {
    const found = await api("/recall", { query: text, limit: 10, ...times() });
    const list = $("recall-hits");
    list.replaceChildren();
    for (const hit of found.hits) {
      const item = el("li", null, "hit");
      const head = el("div");
      head.appendChild(el("strong", hit.text));
      head.appendChild(el("span", " (" + hit.kind + ", score " + hit.score.toFixed(4) +
        ", confidence " + hit.confidence.toFixed(2) + ") "));
      if (hit.fact) {
        const fact = hit.fact;
        head.appendChild(link(fact.subject, () => go(fact.subject, null)));
        head.appendChild(el("span", " "));
        head.appendChild(link("history", () => guarded(() => factHistory(fact))));
      }
      item.appendChild(head);
      item.appendChild(el("div", "why: " + hit.why.join("; "), "why"));
      const p = hit.provenance;
      item.appendChild(el("div", "from: episode " + (p.episode || "-") + ", actor " + (p.actor || "-") +
        ", ref " + (p.ref || "-") + ", recorded " + when(p.recorded_at) + ", positions " +
        p.positions.join(", "), "provenance"));
      list.appendChild(item);
    }
    if (!found.hits.length) list.appendChild(el("li", "nothing recalled"));
  }

  // ---- the token ----------------------------------------------------------------------

  function showLogin(message) {
    $("login").hidden = false;
    $("explorer").hidden = true;
    if (message) say(message, true);
  }

  function start() {
    if (!sessionStorage.getItem("apexmem.token")) {
      showLogin();
      return;
    }
    $("login").hidden = true;
    $("explorer").hidden = false;
    readHash();
    guarded(async () => {
      await search(null);
      await show();
    });
  }

  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem("apexmem.token", $("token").value.trim());
    sessionStorage.setItem("apexmem.tenant", $("tenant").value.trim());
    $("token").value = "";
    say("");
    start();
  });
  $("logout").addEventListener("click", () => {
    sessionStorage.removeItem("apexmem.token");
    sessionStorage.removeItem("apexmem.tenant");
    showLogin("token forgotten");
  });
  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(() => search($("search").value.trim()));
  });
  $("recall-form").addEventListener("submit", (event) => {
    event.preventDefault();
    guarded(() => recall($("recall-query").value.trim()));
  });
  $("hops").addEventListener("change", () => {
    state.hops = Number($("hops").value);
    refresh();
  });
  $("known-slider").addEventListener("input", moveKnown);
  $("faded").addEventListener("change", () => {
    state.faded = $("faded").checked;
    refresh();
  });
  $("valid-at").addEventListener("change", moveValid);
  $("valid-clear").addEventListener("click", () => {
    $("valid-at").value = "";
    moveValid();
  });
  window.addEventListener("popstate", () => {
    readHash();
    guarded(show);
  });
  start();
})();
