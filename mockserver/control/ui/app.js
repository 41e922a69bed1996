// The mockserver inspector: what the mock did, and a few levers, over the control plane.
// Every value is written with textContent or DOM APIs (never as markup); the page changes the
// mock only through the control plane's own operations; the control token lives in
// sessionStorage (this tab only) and is sent as the bearer of every control-plane call.
"use strict";

(() => {
  const TOKEN_KEY = "mockserver.controlToken";
  const WORLD_KEY = "mockserver.world";
  const VIEWS = ["requests", "jobs", "deliveries", "money"];
  const POLL_MS = 1000;
  const OUTCOMES = ["done", "failed", "qa_failed", "cancelled"];
  const TERMINAL = new Set(OUTCOMES);
  // Request headers a curl command leaves to curl.
  const CURL_SKIPS = new Set(["host", "content-length", "connection", "accept-encoding", "user-agent", "accept"]);

  // A mock that made its own control token (off loopback) prints the inspector's address with
  // it in the fragment (#token=...): taken once into this tab's session, then removed from the
  // address bar and the history entry.
  const handed = new URLSearchParams(location.hash.slice(1)).get("token");
  if (handed) {
    sessionStorage.setItem(TOKEN_KEY, handed);
    history.replaceState(null, "", location.pathname + location.search);
  }

  const state = {
    token: sessionStorage.getItem(TOKEN_KEY),
    tokenRequired: false,
    world: sessionStorage.getItem(WORLD_KEY) || "",
    view: "requests",
    lastSeq: 0,
    generation: 0,
    entries: new Map(), // seq -> journal entry shown
    selected: null, // seq of the exchange a person chose (null: the newest is shown)
    shown: null, // seq of the exchange in the pane
    operations: new Set(),
    openJobs: new Set(),
    openBodies: new Set(),
    rendered: new Map(), // element id -> JSON of what it shows
    clock: null,
    polling: false,
    again: false,
    sandboxesAt: 0,
  };

  // -- DOM helpers -------------------------------------------------------------------------

  const $ = (id) => document.getElementById(id);

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "text") node.textContent = String(value);
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === null || child === undefined || child === false) continue;
      node.append(child instanceof Node ? child : String(child)); // strings become text nodes
    }
    return node;
  }

  function setStatus(message, error) {
    const status = $("status");
    status.textContent = message || "";
    status.classList.toggle("error", Boolean(error));
  }

  function pretty(value) {
    return value === null || value === undefined ? "(none)" : JSON.stringify(value, null, 2);
  }

  function prettyText(text) {
    try {
      return pretty(JSON.parse(text));
    } catch {
      return text;
    }
  }

  function time(iso) {
    return iso ? iso.replace("T", " ").replace("Z", "") : "–";
  }

  function duration(seconds) {
    const s = Math.round(seconds);
    if (Math.abs(s) < 60) return `${s}s`;
    if (Math.abs(s) < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
    return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  }

  function statusClass(status) {
    return status ? `s${String(status)[0]}xx` : "";
  }

  function badge(text, kind) {
    return el("span", { class: `badge ${kind || ""}`, text });
  }

  // Replace a container's content only when what it shows changed (so a poll never steals
  // a click or a half-typed value).
  function renderInto(node, key, build) {
    const json = JSON.stringify(key);
    if (state.rendered.get(node.id) === json) return;
    state.rendered.set(node.id, json);
    node.replaceChildren(...[build()].flat());
  }

  // -- the control plane -------------------------------------------------------------------

  class ControlError extends Error {
    constructor(status, body) {
      super(body && body.error ? `${status} ${body.code}: ${body.error}` : `HTTP ${status}`);
      this.status = status;
      this.body = body;
    }
  }

  async function control(method, path, body, params, options) {
    const url = new URL(`/_mock${path}`, location.origin);
    for (const [name, value] of Object.entries(params || {})) {
      if (value !== "" && value !== null && value !== undefined) url.searchParams.set(name, value);
    }
    if (state.world && !(options && options.global)) url.searchParams.set("sandbox", state.world);
    const headers = { Accept: "application/json" };
    if (state.token) headers.Authorization = `Bearer ${state.token}`;
    const init = { method, headers, cache: "no-store" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(url, init);
    const answer = await response.json().catch(() => null);
    if (response.status === 401 && state.tokenRequired) {
      showLogin("The control token was refused; enter it again.");
    }
    if (!response.ok) throw new ControlError(response.status, answer);
    return answer;
  }

  async function act(what, call) {
    try {
      await call();
      setStatus(what);
    } catch (error) {
      setStatus(`${what} failed: ${error.message}`, true);
    }
    poll();
  }

  // -- the token ---------------------------------------------------------------------------

  function showLogin(message) {
    state.token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    $("app").hidden = true;
    $("controls").hidden = true;
    $("login").hidden = false;
    $("login-error").textContent = message || "";
    $("token").focus();
  }

  async function open() {
    $("login").hidden = true;
    $("app").hidden = false;
    $("controls").hidden = false;
    showView(location.hash.slice(1));
    await refreshSandboxes();
    poll();
  }

  async function start() {
    const index = await control("GET", "/", undefined, undefined, { global: true });
    state.tokenRequired = index.tokenRequired;
    if (state.tokenRequired && !state.token) {
      showLogin("");
      return;
    }
    await open();
  }

  $("login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    state.token = $("token").value.trim();
    try {
      await control("GET", "/clock", undefined, undefined, { global: true });
    } catch (error) {
      showLogin(error.status === 401 ? "That token was refused." : error.message);
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, state.token);
    $("token").value = "";
    await open();
  });

  // -- views and polling -------------------------------------------------------------------

  function showView(name) {
    state.view = VIEWS.includes(name) ? name : "requests";
    for (const view of VIEWS) $(`view-${view}`).hidden = view !== state.view;
    for (const tab of document.querySelectorAll(".tabs [data-view]")) {
      tab.setAttribute("aria-selected", String(tab.dataset.view === state.view));
    }
    if (location.hash.slice(1) !== state.view) history.replaceState(null, "", `#${state.view}`);
  }

  for (const tab of document.querySelectorAll(".tabs [data-view]")) {
    tab.addEventListener("click", () => {
      showView(tab.dataset.view);
      poll();
    });
  }

  let timer = null;

  async function poll() {
    if (state.polling) {
      state.again = true;
      return;
    }
    state.polling = true;
    clearTimeout(timer);
    try {
      await refreshClock();
      await refreshRequests();
      if (state.view === "jobs") await refreshJobs();
      if (state.view === "deliveries") await refreshDeliveries();
      if (state.view === "money" || !state.rendered.has("filter-member")) await refreshMoney();
      if (Date.now() - state.sandboxesAt > 5000) await refreshSandboxes();
    } catch (error) {
      if (error.status === 404 && state.world) {
        setStatus(`Sandbox ${state.world} has ended; back to the base world.`, true);
        chooseWorld("");
      } else if (!(error.status === 401 && state.tokenRequired)) {
        setStatus(error.message, true);
      }
    } finally {
      state.polling = false;
      if ($("app").hidden === false) timer = setTimeout(poll, state.again ? 0 : POLL_MS);
      state.again = false;
    }
  }

  // -- the world: base or a sandbox --------------------------------------------------------

  async function refreshSandboxes() {
    state.sandboxesAt = Date.now();
    const { sandboxes } = await control("GET", "/sandboxes", undefined, undefined, { global: true });
    const ids = sandboxes.map((s) => s.id);
    if (state.world && !ids.includes(state.world)) chooseWorld("");
    // Only ids, workspace and clock are shown: a sandbox's keys are never written here.
    renderInto($("world"), [ids, state.world], () => {
      const options = [el("option", { value: "", text: "base world" })];
      for (const s of sandboxes) {
        const label = `sandbox ${s.id}${s.workspace ? ` (${s.workspace})` : ""}`;
        options.push(el("option", { value: s.id, text: label, selected: s.id === state.world }));
      }
      return options;
    });
    $("world").value = state.world;
  }

  function chooseWorld(id) {
    state.world = id;
    sessionStorage.setItem(WORLD_KEY, id);
    $("world").value = id;
    state.rendered.clear();
    resetRequests();
    state.openJobs.clear();
  }

  $("world").addEventListener("change", () => {
    chooseWorld($("world").value);
    poll();
  });

  // -- the clock ---------------------------------------------------------------------------

  async function refreshClock() {
    const clock = await control("GET", "/clock");
    state.clock = clock;
    $("clock-now").textContent = time(clock.now);
    $("clock-mode").textContent = `UTC, ${clock.mode} clock`;
    const manual = clock.mode === "manual";
    for (const button of document.querySelectorAll(".advance")) {
      button.disabled = !manual;
      button.title = manual ? "" : "a real clock moves by itself (start the mock with --clock manual)";
    }
    const due = $("advance-due");
    due.disabled = !manual || clock.nextDueInSeconds === null;
    due.textContent = clock.nextDueAt ? `to next due (${time(clock.nextDueAt)})` : "to next due";
  }

  function advance(seconds) {
    act(`Clock advanced ${duration(seconds)}`, () =>
      control("POST", "/clock/advance", { seconds }));
  }

  for (const button of document.querySelectorAll(".advance")) {
    button.addEventListener("click", () => advance(Number(button.dataset.seconds)));
  }
  $("advance-due").addEventListener("click", () => {
    if (state.clock && state.clock.nextDueInSeconds !== null) {
      advance(state.clock.nextDueInSeconds);
    }
  });

  // -- requests ----------------------------------------------------------------------------

  function requestFilters() {
    const member = $("filter-member").value;
    const [workspace, name] = member ? member.split("/") : ["", ""];
    return {
      operationId: $("filter-operation").value.trim(),
      statusClass: $("filter-status").value,
      workspace,
      member: name,
    };
  }

  function resetRequests() {
    state.generation += 1; // an answer to a request made before this is dropped
    state.lastSeq = 0;
    state.entries.clear();
    state.selected = null;
    state.shown = null;
    $("requests").tBodies[0].replaceChildren();
    $("exchange").hidden = true;
  }

  for (const id of ["filter-operation", "filter-status", "filter-member"]) {
    $(id).addEventListener("change", () => {
      resetRequests();
      poll();
    });
  }
  $("request-filters").addEventListener("submit", (event) => event.preventDefault());

  async function refreshRequests() {
    const first = state.lastSeq === 0;
    const generation = state.generation;
    const answer = await control("GET", "/requests", undefined, {
      ...requestFilters(),
      after: first ? undefined : state.lastSeq,
      limit: first ? 200 : 1000,
    });
    if (generation !== state.generation) return; // the world or a filter changed meanwhile
    const body = $("requests").tBodies[0];
    for (const seq of [...state.entries.keys()]) {
      if (seq < answer.oldestSeq) {
        // gone from the journal (a reset, or the oldest of more than 1,000)
        state.entries.delete(seq);
        body.querySelector(`tr[data-seq="${seq}"]`)?.remove();
        if (state.selected === seq) state.selected = null; // back to the newest
      }
    }
    for (const entry of answer.requests) {
      state.entries.set(entry.seq, entry);
      body.prepend(requestRow(entry)); // newest first
      if (entry.operationId && !state.operations.has(entry.operationId)) {
        state.operations.add(entry.operationId);
        $("operations").append(el("option", { value: entry.operationId }));
      }
    }
    state.lastSeq = Math.max(state.lastSeq, answer.latestSeq);
    $("requests-empty").hidden = state.entries.size > 0;
    showCurrent();
  }

  // The pane shows the exchange a person chose, else the newest (and follows new ones).
  function showCurrent() {
    let seq = state.selected;
    if (seq === null) {
      for (const known of state.entries.keys()) if (seq === null || known > seq) seq = known;
    }
    if (seq === null) {
      state.shown = null;
      $("exchange").hidden = true;
    } else if (seq !== state.shown) {
      showExchange(seq);
    }
  }

  // Whose key made the call: the journal names a valid key's member whatever the answer; a
  // key it does not know is shown by its label (from the redacted header), never itself.
  function who(entry) {
    if (entry.member) return `${entry.member} (${entry.role}, ${entry.workspace})`;
    const sent = entry.requestHeaders.authorization;
    if (!sent) return "no key";
    return sent.startsWith("Bearer ") ? `invalid key (${sent.slice(7)})` : "malformed Authorization header";
  }

  function requestRow(entry) {
    const key = who(entry);
    const operation = entry.operationId || "(no operation)";
    const target = `${entry.method} ${entry.path}`;
    const row = el(
      "tr",
      { "data-seq": entry.seq, class: "clickable", tabindex: 0, title: "Show the exchange" },
      el("td", { class: "mono time", text: time(entry.time) }),
      el("td", { class: "cut", title: key, text: key }),
      el("td", { title: `${operation}\n${target}` }, el("div", { class: "cut", text: operation }),
        el("div", { class: "cut muted mono small", text: target })),
      el("td", {}, badge(entry.status, statusClass(entry.status))),
      el("td", { class: "mono cut", title: entry.code, text: entry.code || "" }),
      el("td", { class: "num", text: `${entry.durationMs.toFixed(1)} ms` }),
    );
    const choose = () => {
      state.selected = entry.seq;
      showExchange(entry.seq);
    };
    row.addEventListener("click", choose);
    row.addEventListener("keydown", (event) => {
      if (event.key === "Enter") choose();
    });
    return row;
  }

  function headerList(headers) {
    return el("dl", { class: "pairs mono small" },
      Object.entries(headers).map(([name, value]) => [el("dt", { text: name }), el("dd", { text: value })]));
  }

  function queryString(query) {
    const params = new URLSearchParams();
    for (const [name, values] of Object.entries(query)) for (const v of values) params.append(name, v);
    const text = params.toString();
    return text ? `?${text}` : "";
  }

  function shellQuote(text) {
    return `'${String(text).replace(/'/g, "'\\''")}'`;
  }

  // A curl command that sends the request again; the key is never written, only its label.
  function curlOf(entry) {
    const lines = [];
    if (entry.keyId) lines.push(`# API_KEY: the key labelled ${entry.keyId}, of ${who(entry)}`);
    const url = location.origin + encodeURI(entry.path) + queryString(entry.query);
    const parts = [`curl -X ${entry.method} ${shellQuote(url)}`];
    for (const [name, value] of Object.entries(entry.requestHeaders)) {
      if (CURL_SKIPS.has(name)) continue;
      if (name === "authorization") parts.push(`-H "Authorization: Bearer $API_KEY"`);
      else if (value !== "[redacted]") parts.push(`-H ${shellQuote(`${name}: ${value}`)}`);
    }
    const sent = entry.requestBody;
    if (sent && typeof sent === "object" && "omitted" in sent && Object.keys(sent).length === 2) {
      lines.push(`# the body is not shown (${sent.omitted})`);
    } else if (sent !== null) {
      parts.push(`--data-raw ${shellQuote(JSON.stringify(sent))}`);
    }
    lines.push(parts.join(" \\\n  "));
    return lines.join("\n");
  }

  function copyButton(text) {
    const button = el("button", { type: "button", text: "Copy" });
    button.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(text);
        button.textContent = "Copied";
      } catch {
        const range = document.createRange();
        range.selectNodeContents(button.nextElementSibling);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        button.textContent = "Selected: copy it";
      }
    });
    return button;
  }

  function showExchange(seq) {
    const entry = state.entries.get(seq);
    if (!entry) return;
    state.shown = seq;
    for (const row of $("requests").tBodies[0].rows) {
      row.classList.toggle("selected", row.dataset.seq === String(seq));
    }
    const curl = curlOf(entry);
    const panel = $("exchange");
    const chosen = state.selected !== null;
    panel.replaceChildren(
      el("div", { class: "bar" },
        el("h2", { text: `${entry.method} ${entry.path}${queryString(entry.query)}` }),
        chosen
          ? el("button", {
            type: "button", text: "Show the newest", title: "Show the newest request, and each new one as it comes",
            onclick: () => {
              state.selected = null;
              state.shown = null; // shown again, following
              showCurrent();
            },
          })
          : el("span", { class: "muted small following", text: "the newest; a row shows another" })),
      el("p", { class: "muted" },
        `${time(entry.time)} · ${who(entry)} · ${entry.operationId || "no operation"} · `,
        badge(entry.status, statusClass(entry.status)),
        entry.code ? ` ${entry.code}` : "",
        ` · ${entry.durationMs.toFixed(1)} ms`,
        entry.replayed ? " · idempotent replay" : "",
        ` · request id ${entry.requestId}`),
      el("h3", { text: "curl" }),
      el("div", { class: "copy" }, copyButton(curl), el("pre", { class: "curl", text: curl })),
      el("h3", { text: "Request headers" }),
      headerList(entry.requestHeaders),
      el("h3", { text: "Request body" }),
      el("pre", { class: "body request-body", text: pretty(entry.requestBody) }),
      el("h3", { text: "Response headers" }),
      headerList(entry.responseHeaders),
      el("h3", { text: "Response body" }),
      el("pre", { class: "body response-body", text: pretty(entry.responseBody) }),
    );
    panel.hidden = false;
  }

  // -- jobs --------------------------------------------------------------------------------

  async function refreshJobs() {
    const { jobs } = await control("GET", "/jobs", undefined, { limit: 200 });
    const container = $("jobs");
    // Not keyed on the clock: a real clock would rebuild the page (and its buttons) each second.
    renderInto(container, [jobs, [...state.openJobs]], () =>
      jobs.length ? jobs.slice().reverse().map(jobCard) : el("p", { class: "muted", text: "No job yet." }));
  }

  function jobCard(job) {
    const open = state.openJobs.has(job.id);
    const project = job.projectTitle === null ? job.projectId || "no project" : `${job.projectTitle} (${job.projectId})`;
    const head = el("button", {
      type: "button", class: "job-head", "aria-expanded": String(open),
      onclick: () => {
        if (state.openJobs.has(job.id)) state.openJobs.delete(job.id);
        else state.openJobs.add(job.id);
        state.rendered.delete("jobs");
        refreshJobs().catch((error) => setStatus(error.message, true));
      },
    },
    el("span", { class: "mono", text: job.id }),
    el("span", { class: "kind", text: job.kind }),
    el("span", { class: "project", text: project }),
    el("span", { class: "muted", text: job.workspace }),
    badge(job.status, `job-${job.status}`),
    el("span", { class: "muted", text: job.phase || "" }));
    const card = el("article", { class: "card job", "data-job": job.id }, head);
    if (open) card.append(jobDetails(job));
    return card;
  }

  function jobDetails(job) {
    const terminal = TERMINAL.has(job.status);
    // The track runs from the job's creation to its last event, or to its next step.
    const created = Date.parse(job.createdAt);
    const now = state.clock ? Date.parse(state.clock.now) : created;
    const moments = job.events.map((e) => Date.parse(e.occurredAt));
    if (job.nextStepAt) moments.push(Date.parse(job.nextStepAt));
    const end = Math.max(...moments, created + 1000);
    const at = (moment) => `${((moment - created) / (end - created)) * 100}%`;
    const track = el("div", { class: "track", "aria-hidden": "true" });
    for (const e of job.events) {
      const dot = el("span", { class: `dot job-${e.status}`, title: `${e.event} at ${time(e.occurredAt)}` });
      dot.style.left = at(Date.parse(e.occurredAt));
      track.append(dot);
    }
    if (job.nextStepAt) {
      const next = el("span", { class: "dot next", title: `next step at ${time(job.nextStepAt)}` });
      next.style.left = at(Date.parse(job.nextStepAt));
      track.append(next);
    }
    if (!terminal && now <= end) {
      const nowMark = el("span", { class: "now", title: `now: ${time(state.clock.now)}` });
      nowMark.style.left = at(now);
      track.append(nowMark);
    }
    const events = el("ol", { class: "timeline" },
      job.events.map((e) => el("li", {},
        el("span", { class: "mono", text: time(e.occurredAt) }),
        el("span", { class: "muted mono", text: `+${duration((Date.parse(e.occurredAt) - created) / 1000)}` }),
        el("span", { class: "event", text: e.event }),
        badge(e.status, `job-${e.status}`),
        el("span", { class: "muted", text: e.phase || "" }))));
    const outcome = el("div", { class: "bar outcome" },
      el("span", { text: terminal ? `Ended ${job.status}.` : `Will end ${job.outcome}. Decide:` }));
    if (!terminal) {
      const immediately = el("input", { type: "checkbox", class: "immediately" });
      for (const status of OUTCOMES) {
        outcome.append(el("button", {
          type: "button", class: `decide job-${status}`, "data-outcome": status, text: status,
          onclick: () => act(
            `Job ${job.id} ends ${status} ${immediately.checked ? "now" : "when its steps are done"}`,
            () => control("POST", `/jobs/${encodeURIComponent(job.id)}/outcome`,
              { status, immediately: immediately.checked })),
        }));
      }
      outcome.append(el("label", {}, immediately, " now (else when its steps are done)"));
    }
    return el("div", { class: "details" },
      el("dl", { class: "pairs small" },
        el("dt", { text: "created" }), el("dd", { class: "mono", text: time(job.createdAt) }),
        el("dt", { text: "next step" }), el("dd", { class: "mono", text: time(job.nextStepAt) }),
        el("dt", { text: "cost" }), el("dd", { text: `${job.cost} credits` }),
        el("dt", { text: "callback" }), el("dd", { class: "mono", text: job.callbackUrl || "none" }),
        job.error ? [el("dt", { text: "error" }), el("dd", { text: job.error })] : []),
      track, events, outcome);
  }

  // -- deliveries --------------------------------------------------------------------------

  async function refreshDeliveries() {
    const { deliveries } = await control("GET", "/deliveries", undefined, { limit: 1000 });
    const events = new Map();
    for (const d of deliveries.slice().reverse()) {
      if (!events.has(d.eventId)) events.set(d.eventId, []);
      events.get(d.eventId).push(d);
    }
    renderInto($("deliveries"), [deliveries, [...state.openBodies]], () =>
      events.size ? [...events.values()].map(eventCard) : el("p", { class: "muted", text: "No delivery yet." }));
  }

  function jobOf(delivery) {
    if (delivery.jobId) return delivery.jobId;
    try {
      const payload = JSON.parse(delivery.body);
      return (payload.data && payload.data.jobId) || payload.jobId || null;
    } catch {
      return null;
    }
  }

  function eventCard(deliveries) {
    const first = deliveries[deliveries.length - 1];
    const job = jobOf(first);
    return el("article", { class: "card event-card", "data-event": first.eventId },
      el("h3", {}, el("span", { text: first.event }), " ",
        el("span", { class: "mono muted", text: first.eventId }),
        job ? el("span", { class: "muted", text: ` · job ${job}` }) : ""),
      deliveries.map(deliveryBlock));
  }

  function deliveryBlock(d) {
    const target = d.target === "callback" ? `callback of job ${d.jobId}` : `subscription ${d.subscriptionId}`;
    const open = state.openBodies.has(d.id);
    const attempts = el("table", { class: "grid attempts" },
      el("thead", {}, el("tr", {}, ["#", "Sent at", "Answer", "Latency", "Outcome", "Signature"].map((h) => el("th", { text: h })))),
      el("tbody", {}, d.attempts.map((a) => el("tr", {},
        el("td", { text: a.attempt }),
        el("td", { class: "mono", text: time(a.at) }),
        el("td", {}, a.status !== null ? badge(a.status, statusClass(a.status)) : el("span", { class: "error", text: a.error })),
        el("td", { class: "num", text: `${a.latencyMs} ms` }),
        el("td", { text: a.outcome }),
        el("td", { class: "signature", title: a.signatureCheck.reason },
          badge(a.signatureCheck.verdict, `sig-${a.signatureCheck.verdict}`), " ",
          el("span", { class: "muted small", text: a.signatureCheck.reason }))))));
    const body = el("pre", { class: "body", text: prettyText(d.body) });
    body.hidden = !open;
    return el("section", { class: "delivery", "data-delivery": d.id },
      el("div", { class: "bar" },
        el("span", { class: "mono", text: d.id }),
        badge(d.state, `state-${d.state}`),
        el("span", { text: target }),
        el("span", { class: "mono muted", text: d.url }),
        d.replayOf ? el("span", { class: "muted", text: `replay of ${d.replayOf}` }) : "",
        el("span", { class: "muted", text: d.nextAttemptAt ? `next attempt ${time(d.nextAttemptAt)}` : "" }),
        el("button", {
          type: "button", class: "replay", text: "Replay",
          onclick: () => act(`Delivery ${d.id} replayed`, () =>
            control("POST", `/deliveries/${encodeURIComponent(d.id)}/replay`)),
        }),
        el("button", {
          type: "button", text: open ? "Hide body" : "Body",
          onclick: () => {
            if (open) state.openBodies.delete(d.id); else state.openBodies.add(d.id);
            poll();
          },
        })),
      d.attempts.length ? attempts : el("p", { class: "muted small", text: "No attempt yet." }),
      body);
  }

  $("flush").addEventListener("click", () =>
    act("Due deliveries made", () => control("POST", "/deliveries/flush", { timeoutSeconds: 15 })));

  // -- clock and money ---------------------------------------------------------------------

  async function refreshMoney() {
    const money = state.view === "money";
    const [{ workspaces }, faults, rates] = await Promise.all([
      control("GET", "/workspaces"),
      money ? control("GET", "/faults") : Promise.resolve(null),
      money ? control("GET", "/rate-limits") : Promise.resolve(null),
    ]);
    renderInto($("filter-member"), workspaces.map((w) => [w.slug, w.members]), () => {
      const chosen = $("filter-member").value;
      const options = [el("option", { value: "", text: "anyone" })];
      for (const w of workspaces) {
        for (const m of w.members) {
          const value = `${w.slug}/${m.name}`;
          options.push(el("option", { value, text: `${m.name} (${m.role}, ${w.slug})`, selected: value === chosen }));
        }
      }
      return options;
    });
    if (!faults) return;
    const clock = state.clock;
    renderInto($("clock-details"), clock, () => [
      el("dt", { text: "now" }), el("dd", { class: "mono", text: time(clock.now) }),
      el("dt", { text: "mode" }), el("dd", { text: clock.mode === "manual" ? "manual: moves only when advanced (buttons above)" : "real: moves by itself" }),
      el("dt", { text: "next due" }), el("dd", { class: "mono", text: clock.nextDueAt ? `${time(clock.nextDueAt)} (in ${duration(clock.nextDueInSeconds)})` : "nothing waits for the clock" }),
    ]);
    renderInto($("workspaces-body"), workspaces, () => workspaces.map((w) => {
      const input = el("input", { type: "number", min: 0, value: w.credits, "aria-label": `Credits of ${w.slug}`, class: "credits-input" });
      return el("tr", { "data-workspace": w.slug },
        el("td", { class: "mono", text: w.slug }),
        el("td", { text: w.name }),
        el("td", { class: "small", text: w.members.map((m) => `${m.name} (${m.role}${m.budgetCapped ? ", capped" : ""})`).join(", ") }),
        el("td", { class: "num credits", text: w.credits }),
        el("td", {}, el("form", {
          class: "bar",
          onsubmit: (event) => {
            event.preventDefault();
            const balance = Number(input.value);
            act(`Credits of ${w.slug} set to ${balance}`, () =>
              control("PUT", `/workspaces/${encodeURIComponent(w.slug)}/credits`, { balance }));
          },
        }, input, el("button", { type: "submit", text: "Set" }))));
    }));
    renderRateLimits(rates);
    const store = faults.credentialStore;
    $("credential-store").textContent = store.reachable
      ? "The credential store is reachable."
      : `The credential store is unreachable (Retry-After ${store.retryAfter} s; ${store.fired} requests answered 503).`;
    renderInto($("faults-body"), faults.faults, () => faults.faults.length
      ? faults.faults.map((f) => el("tr", { "data-fault": f.id },
        el("td", { class: "mono", text: f.id }),
        el("td", { class: "mono", text: f.match.operationId || f.match.path }),
        el("td", { text: f.status ? `${f.status} ${f.code}` : `delay ${f.delayMs} ms` }),
        el("td", { class: "num", text: f.remaining === null ? "until cleared" : f.remaining }),
        el("td", { class: "num", text: f.fired }),
        el("td", {}, el("button", {
          type: "button", text: "Clear",
          onclick: () => act(`Fault ${f.id} cleared`, () => control("DELETE", `/faults/${encodeURIComponent(f.id)}`)),
        }))))
      : el("tr", {}, el("td", { colspan: 6, class: "muted", text: "No fault waiting to fire." })));
  }

  // Each person's bucket (all keys of a member share one), by workspace and member: never a key.
  function renderRateLimits(rates) {
    const manual = rates.clock === "manual";
    $("rate-window").textContent = `${rates.limit} requests per ${rates.windowSeconds} seconds per person (all keys of a member share one bucket); `
      + (manual
        ? "the windows move only with the mock's manual clock (advance it above), or empty a bucket here."
        : "the windows move with real time.");
    // On a real clock the seconds left change every poll: keyed without them, so a poll never
    // rebuilds the buttons under a click.
    const key = [rates.limit, rates.buckets.map((b) => [b.workspace, b.member, b.used, b.resetsAt, manual && b.resetsInSeconds])];
    renderInto($("rate-limits-body"), key, () => rates.buckets.length
      ? rates.buckets.map((b) => el("tr", { "data-bucket": `${b.workspace}/${b.member}` },
        el("td", { class: "mono", text: b.workspace }),
        el("td", { text: b.member }),
        el("td", { class: "num used", text: `${b.used} / ${b.limit}` }),
        el("td", { class: "mono resets", text: manual ? `${time(b.resetsAt)} (in ${duration(b.resetsInSeconds)})` : time(b.resetsAt) }),
        el("td", {}, el("button", {
          type: "button", text: "Reset", class: "reset-bucket",
          onclick: () => act(`Rate-limit bucket of ${b.member} (${b.workspace}) emptied`, () =>
            control("DELETE", `/rate-limits/${encodeURIComponent(b.workspace)}/${encodeURIComponent(b.member)}`)),
        }))))
      : el("tr", {}, el("td", { colspan: 5, class: "muted", text: "No request counted in an open window: every bucket is full." })));
  }

  $("fault-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const fault = {
      match: { [$("fault-match").value]: $("fault-target").value.trim() },
      status: Number($("fault-status").value),
      code: $("fault-code").value.trim(),
      count: Number($("fault-count").value),
    };
    act("Fault added", () => control("POST", "/faults", fault));
  });
  $("faults-clear").addEventListener("click", () =>
    act("Every fault cleared", () => control("DELETE", "/faults")));

  start().catch((error) => {
    if (error.status !== 401) setStatus(`The control plane did not answer: ${error.message}`, true);
  });
})();
