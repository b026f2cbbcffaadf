// minichess: the board, the moves and the analysis, talking to the JSON API of agents/play/web.py.
// A chess variant's game draws pieces on squares named like "e4"; a board game's (kind "board": Tic-Tac-Toe,
// Connect Four, Gomoku, checkers) draws its grid of cells from the server's "cells", moves being actions.
"use strict";

const SQ = 100;  // board units per square
const FILES = "abcdefgh";
const SVGNS = "http://www.w3.org/2000/svg";

// Pieces drawn in a 100x100 square: [outline paths, detail lines]. Our own simple shapes.
const BASE = "M20 88H80V80Q80 73 73 73H27Q20 73 20 80Z";
const PIECES = {
  P: [[BASE, "M35 73L41 51H59L65 73Z", "M36 51a14 5 0 0 1 28 0a14 5 0 0 1-28 0Z",
       "M50 21a12 12 0 1 1 0 24a12 12 0 1 1 0-24Z"], []],
  R: [[BASE, "M31 73L34 42H66L69 73Z", "M26 42V18H36V26H45V18H55V26H64V18H74V42Z"], ["M34 42H66", "M33 60H67"]],
  N: [[BASE, "M70 73H30C29 60 35 53 45 46C38 48 31 53 25 51C18 48 19 41 25 36C33 30 38 24 40 16L45 10L49 18"
       + "C66 19 77 35 76 52C75 61 72 67 70 73Z"], ["M36 32a2.5 2.5 0 1 0 0.1 0", "M56 28C62 36 64 46 62 60"]],
  B: [[BASE, "M36 73Q40 60 44 57H56Q60 60 64 73Z", "M50 17C34 31 32 45 40 57H60C68 45 66 31 50 17Z",
       "M50 6a5.5 5.5 0 1 1 0 11a5.5 5.5 0 1 1 0-11Z"], ["M55 29L45 43", "M41 57H59"]],
  Q: [[BASE, "M28 73L20 33L32 52L35 27L44 50L50 22L56 50L65 27L68 52L80 33L72 73Z",
       "M20 24a5 5 0 1 1 0 10a5 5 0 1 1 0-10Z", "M35 18a5 5 0 1 1 0 10a5 5 0 1 1 0-10Z",
       "M50 13a5 5 0 1 1 0 10a5 5 0 1 1 0-10Z", "M65 18a5 5 0 1 1 0 10a5 5 0 1 1 0-10Z",
       "M80 24a5 5 0 1 1 0 10a5 5 0 1 1 0-10Z"], ["M30 64H70"]],
  K: [[BASE, "M30 73C21 58 23 41 35 39C42 38 46 43 50 49C54 43 58 38 65 39C77 41 79 58 70 73Z",
       "M46 8H54V16H62V24H54V40H46V24H38V16H46Z"], ["M31 63H69", "M50 49V70"]],
};

const $ = (id) => document.getElementById(id);
let options = null;   // /api/options
let game = null;      // the game's state from the server
let view = null;      // the ply shown; null: the current position
let flipped = false;
let selected = null;  // square of the piece picked up (a board game: its cell, "row,col")
let drag = null;      // {from, el, moved}
let autoplay = false;
let busy = false;     // a request that changes the game is under way
let analysisFor = null;

async function api(method, path, body) {
  const init = {method, headers: {}};
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({error: `HTTP ${response.status}`}));
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

function say(text) { $("message").textContent = text || ""; }

// -- setup -----------------------------------------------------------------------

async function init() {
  options = await api("GET", "/api/options");
  for (const v of options.variants) {
    $("variant").append(new Option(`${v.name} (${v.width}x${v.height})`, v.name));
  }
  if ((options.games || []).length) {
    const group = document.createElement("optgroup");
    group.label = "Board games";
    for (const g of options.games) {
      const size = `${g.columns}x${g.rows}`;
      group.append(new Option(g.title.includes(size) ? g.title : `${g.title} (${size})`, g.name));
    }
    $("variant").append(group);
  }
  $("variant").value = "gardner";
  fillPlayers();
  $("variant").addEventListener("change", () => { fillPlayers(); if (!game) render(); });
  $("setup").addEventListener("submit", (e) => { e.preventDefault(); newGame(); });
  $("pgn-file").addEventListener("change", loadPgn);
  $("first").onclick = () => show(0);
  $("back").onclick = () => show(shownPly() - 1);
  $("forward").onclick = () => show(shownPly() + 1);
  $("last").onclick = () => show(null);
  $("flip").onclick = () => { flipped = !flipped; render(); };
  $("undo").onclick = () => change("POST", "undo", {});
  $("resign").onclick = () => change("POST", "resign", {});
  $("step").onclick = () => agentMove();
  $("auto").onclick = () => { autoplay = !autoplay; render(); if (autoplay) agentMove(); };
  $("analyse").onchange = () => { analysisFor = null; render(); };
  document.addEventListener("keydown", (e) => {
    if (!game || e.target.tagName === "INPUT") return;
    if (e.key === "ArrowLeft") show(shownPly() - 1);
    if (e.key === "ArrowRight") show(shownPly() + 1);
  });
  const board = $("board");
  board.addEventListener("pointerdown", pointerDown);
  board.addEventListener("pointermove", pointerMove);
  board.addEventListener("pointerup", pointerUp);
  render();
}

// A board game's entry in the options (null: a chess variant).
function boardInfo(name) { return (options && (options.games || []).find((g) => g.name === name)) || null; }

function isBoard() { return game !== null && game.kind === "board"; }

// The keys of players and names in the game's state.
function seats() { return isBoard() ? ["first", "second"] : ["white", "black"]; }

function watchingAgents() { return seats().every((s) => game.players[s] !== options.human); }

function fillPlayers() {
  const variant = $("variant").value, board = boardInfo(variant);
  $("white-label").textContent = board ? `First (${board.sides[0]})` : "White";
  $("black-label").textContent = board ? `Second (${board.sides[1]})` : "Black";
  $("fen").disabled = board !== null;
  for (const side of ["white", "black"]) {
    const select = $(side), old = select.value;
    select.innerHTML = "";
    select.append(new Option("you (human)", options.human));
    for (const a of options.agents) {
      const plays = board ? a.games === null || (a.games || []).includes(variant)
        : !a.variants || a.variants.includes(variant);
      if (plays) select.append(new Option(a.name, a.name));
    }
    select.value = [...select.options].some((o) => o.value === old) ? old : (side === "white" ? options.human : "random");
  }
}

async function newGame() {
  const board = boardInfo($("variant").value);
  const body = board ? {variant: board.name, first: $("white").value, second: $("black").value}
    : {variant: $("variant").value, white: $("white").value, black: $("black").value};
  if (!board && $("fen").value.trim()) body.fen = $("fen").value.trim();
  autoplay = false;
  try {
    const previous = game;
    setGame(await api("POST", "/api/games", body));
    forget(previous);
    // checkers: the first player's men start at the top, so a person playing them sees the board turned
    flipped = isBoard() ? game.game.checkered && game.players.first === options.human
                          && game.players.second !== options.human
      : game.players.white !== options.human && game.players.black === options.human;
    render();
    maybeAgent();
  } catch (err) { say(err.message); }
}

async function loadPgn(event) {
  const file = event.target.files[0];
  if (!file) return;
  try {
    const previous = game;
    setGame(await api("POST", "/api/pgn", {pgn: await file.text()}));
    forget(previous);
    view = 0;
    say(game.pgn_result ? `The PGN gives the result ${game.pgn_result}.` : "");
    render();
  } catch (err) { say(err.message); }
  event.target.value = "";
}

// The server drops a game left behind, so an agent still thinking in it stops.
function forget(old) {
  if (old) api("DELETE", `/api/games/${old.id}`).catch(() => {});
}

function setGame(state) {
  game = state; view = null; selected = null; analysisFor = null; autoplay = false; say("");
}

// -- moves -----------------------------------------------------------------------

async function change(method, action, body) {
  if (!game || busy) return;
  busy = true;
  const id = game.id;
  try {
    const state = await api(method, `/api/games/${id}/${action}`, body);
    if (game.id === id) { game = state; view = null; selected = null; say(""); }  // not if replaced meanwhile
  } catch (err) { if (game.id === id) say(err.message); }
  busy = false;
  render();
}

async function play(uci) {
  await change("POST", "move", {move: uci});
  maybeAgent();
}

async function playAction(action) {  // a board game's move
  await change("POST", "move", {action});
  maybeAgent();
}

function maybeAgent() {
  if (!game || game.over) return;
  if (game.to_move !== options.human && (!watchingAgents() || autoplay)) agentMove();
}

async function agentMove() {
  if (!game || game.over || game.to_move === options.human || busy) return;
  busy = true;
  game.busy = true;
  render();
  const id = game.id;
  try {
    const state = await api("POST", `/api/games/${id}/agent`, {});
    if (game.id === id) { game = state; view = null; say(""); }  // a new game may have replaced it meanwhile
  } catch (err) { if (game.id === id) { say(err.message); autoplay = false; } }
  busy = false;
  render();
  if (autoplay) setTimeout(maybeAgent, 350);
  else maybeAgent();
}

function canMove() {
  return game && !game.over && !busy && view === null && game.to_move === options.human;
}

function movesFrom(square) { return canMove() ? game.legal.filter((m) => m.from === square) : []; }

function tryMove(from, to) {
  const moves = game.legal.filter((m) => m.from === from && m.to === to);
  if (!moves.length) return false;
  if (moves.length === 1) { play(moves[0].uci); return true; }
  choosePromotion(moves);
  return true;
}

function choosePromotion(moves) {
  const box = $("promotion");
  box.innerHTML = "";
  const choices = document.createElement("div");
  choices.className = "choices";
  const white = game.turn === "white";
  for (const m of moves) {
    const button = document.createElement("button");
    button.title = m.san;
    button.dataset.promotion = m.promotion;
    const svg = document.createElementNS(SVGNS, "svg");
    svg.setAttribute("viewBox", "0 0 100 100");
    svg.append(pieceShape(white ? m.promotion.toUpperCase() : m.promotion, 0, 0));
    button.append(svg);
    button.onclick = () => { box.hidden = true; play(m.uci); };
    choices.append(button);
  }
  const cancel = document.createElement("button");
  cancel.textContent = "×";
  cancel.title = "cancel";
  cancel.onclick = () => { box.hidden = true; selected = null; render(); };
  choices.append(cancel);
  box.append(choices);
  box.hidden = false;
}

// -- the board -------------------------------------------------------------------

function shownPly() { return view === null ? game.ply : view; }

function show(ply) {
  if (!game) return;
  view = ply === null || ply >= game.ply ? null : Math.max(0, ply);
  selected = null;
  render();
}

function fenAt(ply) { return ply === 0 ? game.start_fen : game.history[ply - 1].fen; }

function placement(fen, width) {
  const board = {};
  fen.split(" ")[0].split("/").forEach((row, i, rows) => {
    let file = 0;
    for (const part of row.match(/\d+|\D/g) || []) {
      if (/\d/.test(part)) { file += parseInt(part, 10); continue; }
      board[FILES[file] + (rows.length - i)] = part;
      file += 1;
    }
  });
  return board;
}

// Before the first game: the chosen variant's start position, so the page opens on a board.
function preview() {
  const v = options && options.variants.find((o) => o.name === $("variant").value);
  return v ? {width: v.width, height: v.height, fen: v.start_fen} : null;
}

function squareXY(square) {
  const {width, height} = game ? game.variant : preview();
  const file = FILES.indexOf(square[0]), rank = parseInt(square.slice(1), 10) - 1;
  return flipped ? [(width - 1 - file) * SQ, rank * SQ] : [file * SQ, (height - 1 - rank) * SQ];
}

function squareAt(event) {
  const svg = $("board");
  const point = svg.createSVGPoint();
  point.x = event.clientX; point.y = event.clientY;
  const p = point.matrixTransform(svg.getScreenCTM().inverse());
  const {width, height} = game.variant;
  let file = Math.floor(p.x / SQ), row = Math.floor(p.y / SQ);
  if (file < 0 || row < 0 || file >= width || row >= height) return null;
  if (flipped) file = width - 1 - file; else row = height - 1 - row;  // row: now the rank, from 0
  return FILES[file] + (row + 1);
}

function el(name, attrs, parent) {
  const node = document.createElementNS(SVGNS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (parent) parent.append(node);
  return node;
}

function pieceShape(letter, x, y) {
  const white = letter === letter.toUpperCase();
  const [outlines, details] = PIECES[letter.toUpperCase()];
  const g = el("g", {transform: `translate(${x} ${y})`, class: "piece", "data-piece": letter});
  for (const d of outlines) {
    el("path", {d, fill: white ? "#fbfbf8" : "#2a2a2a", stroke: white ? "#1e1e1e" : "#0d0d0d",
                "stroke-width": 3.2, "stroke-linejoin": "round"}, g);
  }
  for (const d of details) {
    el("path", {d, fill: "none", stroke: white ? "#1e1e1e" : "#e8e8e8", "stroke-width": 2.6,
                "stroke-linecap": "round"}, g);
  }
  return g;
}

function render() {
  renderPanel();
  const svg = $("board");
  svg.innerHTML = "";
  if (isBoard() || (!game && boardInfo($("variant").value))) { renderGrid(svg); return; }
  const start = game ? null : preview();
  if (!game && !start) {  // the options have not arrived yet
    svg.setAttribute("viewBox", "0 0 500 500");
    el("rect", {width: 500, height: 500, fill: "#e9e4d8"}, svg);
    return;
  }
  const {width, height} = game ? game.variant : start;
  svg.setAttribute("viewBox", `0 0 ${width * SQ} ${height * SQ}`);
  const ply = game ? shownPly() : 0;
  const pieces = placement(game ? fenAt(ply) : start.fen, width);
  const last = game && ply > 0 ? game.history[ply - 1].uci : null;
  const dests = game && selected ? movesFrom(selected).map((m) => m.to) : [];
  const checked = game && view === null && game.check
    ? Object.keys(pieces).find((s) => pieces[s] === (game.turn === "white" ? "K" : "k")) : null;
  for (let rank = 1; rank <= height; rank++) {
    for (let file = 0; file < width; file++) {
      const square = FILES[file] + rank;
      const [x, y] = squareXY(square);
      const light = (file + rank) % 2 === 0;
      el("rect", {x, y, width: SQ, height: SQ, class: "square", "data-square": square,
                  fill: light ? "#f0d9b5" : "#b58863"}, svg);
      if (last && (last.slice(0, 2) === square || last.slice(2, 4).replace(/[qrbn]$/, "") === square)) {
        el("rect", {x, y, width: SQ, height: SQ, fill: "rgba(205, 210, 60, 0.5)", "pointer-events": "none"}, svg);
      }
      if (square === selected) {
        el("rect", {x, y, width: SQ, height: SQ, fill: "rgba(20, 110, 190, 0.45)", "pointer-events": "none"}, svg);
      }
      if (square === checked) {
        el("circle", {cx: x + 50, cy: y + 50, r: 48, fill: "rgba(220, 30, 30, 0.55)", "pointer-events": "none"}, svg);
      }
      const onBottom = flipped ? rank === height : rank === 1;
      const onLeft = flipped ? file === width - 1 : file === 0;
      const ink = light ? "#b58863" : "#f0d9b5";
      if (onBottom) el("text", {x: x + SQ - 5, y: y + SQ - 6, "text-anchor": "end", "font-size": 17, fill: ink,
                                "font-family": "sans-serif", "pointer-events": "none"}, svg).textContent = FILES[file];
      if (onLeft) el("text", {x: x + 5, y: y + 19, "font-size": 17, fill: ink, "font-family": "sans-serif",
                              "pointer-events": "none"}, svg).textContent = rank;
    }
  }
  for (const [square, letter] of Object.entries(pieces)) {
    const [x, y] = squareXY(square);
    const g = pieceShape(letter, x, y);
    g.setAttribute("data-square", square);
    g.setAttribute("pointer-events", "none");
    svg.append(g);
  }
  for (const square of dests) {
    const [x, y] = squareXY(square);
    const capture = pieces[square] !== undefined;
    el("circle", capture
      ? {cx: x + 50, cy: y + 50, r: 44, fill: "none", stroke: "rgba(20, 90, 40, 0.6)", "stroke-width": 8,
         class: "dest", "data-square": square, "pointer-events": "none"}
      : {cx: x + 50, cy: y + 50, r: 15, fill: "rgba(20, 90, 40, 0.55)", class: "dest", "data-square": square,
         "pointer-events": "none"}, svg);
  }
}

function renderPanel() {
  const status = $("status");
  for (const id of ["first", "back", "forward", "last", "undo", "resign", "step", "auto", "flip"]) $(id).disabled = !game;
  $("download").classList.toggle("disabled", !game || isBoard());
  if (!game) { $("top-player").textContent = $("bottom-player").textContent = ""; $("moves").innerHTML = ""; return; }
  const ply = shownPly(), board = isBoard();
  const [top, bottom] = board ? (flipped ? ["second", "first"] : ["first", "second"])
    : flipped ? ["white", "black"] : ["black", "white"];
  for (const [id, side] of [["top-player", top], ["bottom-player", bottom]]) {
    const person = game.players[side] === options.human && game.names[side] === options.human;
    const who = person ? "you" : game.names[side];
    $(id).textContent = `${sideName(side)}: ${who}`;
    $(id).classList.toggle("to-move", !game.over && game.turn === side);
  }
  const watching = watchingAgents();
  $("watch").hidden = !watching;
  if (game.over) autoplay = false;
  $("auto").textContent = autoplay ? "Pause" : "Play";
  $("step").disabled = !watching || game.over || busy;
  $("auto").disabled = !watching || game.over;
  $("resign").disabled = game.over || watching || busy;
  $("undo").disabled = game.ply === 0 || busy;
  $("first").disabled = $("back").disabled = ply === 0;
  $("forward").disabled = $("last").disabled = view === null;
  $("flip").disabled = board && !game.game.checkered;  // a grid game has one way up (Connect Four's gravity)
  $("download").href = board ? "#" : `/api/games/${game.id}/pgn`;
  let text, state;
  if (board) {
    [text, state] = boardStatus(watching);
  } else if (game.over) {
    const who = game.result === "1-0" ? "White wins" : game.result === "0-1" ? "Black wins" : "Draw";
    text = `${who} (${game.result}) by ${game.termination}.`; state = "over";
  } else if (game.busy) {
    text = `${game.names[game.turn]} is thinking…`; state = "thinking";
  } else if (game.to_move === options.human) {
    text = `${game.turn === "white" ? "White" : "Black"} to move${game.check ? " (check)" : ""}: your move.`;
    state = "your-move";
  } else {
    text = `${game.names[game.turn]} to move${watching ? ": press Step or Play." : "."}`; state = "agent";
  }
  if (view !== null) text = `Viewing move ${view} of ${game.ply}. ${text}`;
  status.textContent = text;
  status.dataset.state = state;
  status.dataset.ply = game.ply;
  status.dataset.game = game.id;
  const list = $("moves");
  list.innerHTML = "";
  let li = null;
  if (board) {  // a line per round: the first player's turn, then the second's; a multi-jump's jumps together
    game.history.forEach((entry, i) => {
      const goesOn = i > 0 && game.history[i - 1].player === entry.player;
      if (!li || (!goesOn && entry.player === 0)) {
        li = document.createElement("li"); list.append(li);
        if (entry.player !== 0) li.append(span("…", null));
      }
      const s = li.appendChild(span(entry.name, i + 1));
      if (goesOn) s.classList.add("more");
    });
  } else {
    const startBlack = game.start_fen.split(" ")[1] === "b";
    game.history.forEach((entry, i) => {
      const whiteMove = (i + (startBlack ? 1 : 0)) % 2 === 0;
      if (whiteMove || !li) { li = document.createElement("li"); list.append(li); if (!whiteMove) li.append(span("…", null)); }
      li.append(span(entry.san, i + 1));
    });
  }
  const current = list.querySelector("span.current");
  if (current) list.scrollTop = Math.max(0, current.offsetTop - list.clientHeight / 2);
  if (!$("analyse").checked) $("analysis").innerHTML = "";
  else if (board) $("analysis").textContent = "No analysis for board games: it is for chess variants.";
  else requestAnalysis(ply);

  function span(text, target) {
    const s = document.createElement("span");
    s.textContent = text;
    if (target !== null) {
      s.dataset.ply = target;
      if (target === ply) s.className = "current";
      s.onclick = () => show(target);
    }
    return s;
  }
}

// "White", or a board game's seat with what its pieces are called: "X (first)", "Black (first)".
function sideName(side) {
  if (!isBoard()) return side === "white" ? "White" : "Black";
  return `${game.game.sides[side === "first" ? 0 : 1]} (${side})`;
}

function boardStatus(watching) {
  if (game.over) {
    if (game.winner === null) return [`Draw (${game.result}).`, "over"];
    const how = game.termination === "resignation" ? " by resignation" : "";
    return [`${sideName(seats()[game.winner])} wins (${game.result})${how}.`, "over"];
  }
  if (game.busy) return [`${game.names[game.turn]} is thinking…`, "thinking"];
  if (game.to_move === options.human) {
    const last = game.history[game.history.length - 1];
    const jumping = last && last.player === game.to_play;  // checkers: the same piece jumps again
    return [`${sideName(game.turn)} to move: your move${jumping ? " (the jump goes on)" : ""}.`, "your-move"];
  }
  return [`${game.names[game.turn]} to move${watching ? ": press Step or Play." : "."}`, "agent"];
}

async function requestAnalysis(ply) {
  const key = `${game.id}:${ply}:${game.ply}`;
  if (analysisFor === key) return;
  analysisFor = key;
  const box = $("analysis");
  box.textContent = "analysing…";
  try {
    const data = await api("GET", `/api/games/${game.id}/analysis?ply=${ply}`);
    if (analysisFor !== key) return;
    box.innerHTML = "";
    if (data.tablebase) {
      const tb = data.tablebase;
      box.append(heading(`Tablebase: the side to move ${tb.verdict === "draw" ? "draws" : tb.verdict}`));
      const table = document.createElement("table");
      for (const m of tb.moves) {
        const row = table.insertRow();
        row.insertCell().textContent = m.san;
        const cell = row.insertCell();
        cell.textContent = m.verdict;
        cell.className = m.value > 0 ? "win" : m.value < 0 ? "loss" : "draw";
      }
      box.append(table);
    }
    if (data.search) {
      const s = data.search;
      box.append(heading(`${s.agent}: value ${signed(s.value)} for the side to move, ${s.simulations} simulations`));
      const table = document.createElement("table");
      for (const m of s.moves) {
        const row = table.insertRow();
        row.insertCell().textContent = m.san;
        const bar = document.createElement("div");
        bar.className = "bar";
        bar.style.width = `${Math.round(100 * m.visits)}%`;
        const cell = row.insertCell();
        cell.style.width = "50%";
        cell.append(bar);
        row.insertCell().textContent = `${Math.round(100 * m.visits)}%`;
        row.insertCell().textContent = m.q === null ? `prior ${Math.round(100 * m.prior)}%` : `Q ${signed(m.q)}`;
      }
      box.append(table);
    }
    if (!data.tablebase && !data.search) box.textContent = "No analysis here: it needs 3x3 (tablebase) or an AlphaZero player.";
  } catch (err) { box.textContent = err.message; }

  function heading(text) { const p = document.createElement("p"); p.textContent = text; return p; }
  function signed(x) { return (x >= 0 ? "+" : "") + x.toFixed(2); }
}

// -- pointer: click a piece then a square, or drag it ------------------------------

function pointerDown(event) {
  if (!game) return;
  if (isBoard()) { boardClick(event); return; }
  const square = squareAt(event);
  if (!square) return;
  if (selected && selected !== square && tryMove(selected, square)) { selected = null; return; }
  if (movesFrom(square).length) {
    selected = square;
    render();
    const piece = $("board").querySelector(`g.piece[data-square="${square}"]`);
    drag = {from: square, el: piece, moved: false, start: [event.clientX, event.clientY]};
    $("board").setPointerCapture(event.pointerId);
  } else if (selected) {
    selected = null;
    render();
  }
}

function pointerMove(event) {
  if (!drag || !drag.el) return;
  const dx = event.clientX - drag.start[0], dy = event.clientY - drag.start[1];
  if (!drag.moved && Math.hypot(dx, dy) < 4) return;
  drag.moved = true;
  const svg = $("board"), point = svg.createSVGPoint();
  point.x = event.clientX; point.y = event.clientY;
  const p = point.matrixTransform(svg.getScreenCTM().inverse());
  drag.el.setAttribute("transform", `translate(${p.x - 50} ${p.y - 50})`);
  svg.append(drag.el);  // on top
}

function pointerUp(event) {
  if (!drag) return;
  const {from, moved} = drag;
  drag = null;
  if (!moved) return;  // a click: the piece stays picked up
  const square = squareAt(event);
  if (square && square !== from && tryMove(from, square)) { selected = null; return; }
  render();
}

// -- board games: a grid of cells, moves by clicking ----------------------------------

const cellKey = (cell) => (cell ? `${cell[0]},${cell[1]}` : null);

// How a board game looks: checkers' men and kings on dark squares, Connect Four's discs, Tic-Tac-Toe's
// crosses and noughts, Gomoku's stones (the default for a grid game).
function boardStyle(info) {
  return info.checkered ? "checkers" : info.drop ? "discs" : info.name === "tictactoe" ? "marks" : "stones";
}

function cellsAt(ply) { return ply === 0 ? game.start_cells : game.history[ply - 1].cells; }

function cellXY(row, col, info) {
  return flipped ? [(info.columns - 1 - col) * SQ, (info.rows - 1 - row) * SQ] : [col * SQ, row * SQ];
}

function cellAt(event) {
  const svg = $("board"), point = svg.createSVGPoint();
  point.x = event.clientX; point.y = event.clientY;
  const p = point.matrixTransform(svg.getScreenCTM().inverse());
  const {rows, columns} = game.game;
  let col = Math.floor(p.x / SQ), row = Math.floor(p.y / SQ);
  if (col < 0 || row < 0 || col >= columns || row >= rows) return null;
  if (flipped) { col = columns - 1 - col; row = rows - 1 - row; }
  return [row, col];
}

// Grid games: a click on a free cell (Connect Four: anywhere in the column) plays there. Checkers: click a
// piece, then where it goes; a jump that goes on keeps its piece picked up for the next click.
function boardClick(event) {
  const cell = cellAt(event);
  if (!cell || !canMove()) return;
  const key = cellKey(cell), legal = game.legal;
  if (legal.every((m) => m.from === null)) {
    let move = legal.find((m) => cellKey(m.to) === key);
    if (!move && game.game.drop) move = legal.find((m) => m.to[1] === cell[1]);
    if (move) playAction(move.action);
    return;
  }
  const move = selected !== null && legal.find((m) => cellKey(m.from) === selected && cellKey(m.to) === key);
  if (move) { selected = null; playAction(move.action); return; }
  selected = legal.some((m) => cellKey(m.from) === key) ? key : null;
  render();
}

function renderGrid(svg) {
  const info = game ? game.game : boardInfo($("variant").value);
  const labels = game ? game.labels : info.labels;
  const style = boardStyle(info), {rows, columns} = info;
  const width = columns * SQ, height = rows * SQ;
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const ply = game ? shownPly() : 0;
  const cells = game ? cellsAt(ply) : info.cells;
  const last = game && ply > 0 ? game.history[ply - 1] : null;
  const marked = new Set(last ? [cellKey(last.from), cellKey(last.to)] : []);
  if (game && selected === null && canMove()) {  // only one piece can move (a jump goes on): picked up for you
    const froms = new Set(game.legal.filter((m) => m.from).map((m) => cellKey(m.from)));
    if (froms.size === 1) selected = [...froms][0];
  }
  const dests = game && selected !== null
    ? game.legal.filter((m) => cellKey(m.from) === selected).map((m) => cellKey(m.to)) : [];
  const none = {"pointer-events": "none"};
  const line = (d, stroke, strokeWidth) => el("path", {d, stroke, "stroke-width": strokeWidth, ...none}, svg);
  if (style !== "checkers") {
    el("rect", {width, height, fill: {marks: "#fbfaf6", discs: "#2f5fb3", stones: "#dcb35c"}[style]}, svg);
  }
  for (let row = 0; row < rows; row++) {
    for (let col = 0; col < columns; col++) {
      const [x, y] = cellXY(row, col, info), key = `${row},${col}`;
      const dark = (row + col) % 2 === 1;
      el("rect", {x, y, width: SQ, height: SQ, class: "cell", "data-cell": key,
                  fill: style === "checkers" ? (dark ? "#b58863" : "#f0d9b5") : "transparent"}, svg);
      if (style === "discs") el("circle", {cx: x + 50, cy: y + 50, r: 40, fill: "#f6f4ef", ...none}, svg);
      if (marked.has(key)) {
        el("rect", {x, y, width: SQ, height: SQ, fill: "rgba(205, 210, 60, 0.5)", ...none}, svg);
      }
      if (key === selected) el("rect", {x, y, width: SQ, height: SQ, fill: "rgba(20, 110, 190, 0.45)", ...none}, svg);
      if (labels && labels[row][col]) {
        el("text", {x: x + 5, y: y + 19, "font-size": 16, fill: "#f0d9b5", "font-family": "sans-serif", ...none},
           svg).textContent = labels[row][col];
      }
    }
  }
  if (style === "stones") {  // the lines through the cells' centres
    for (let i = 0; i < rows; i++) line(`M50 ${i * SQ + 50}H${width - 50}`, "#5a4326", 3);
    for (let i = 0; i < columns; i++) line(`M${i * SQ + 50} 50V${height - 50}`, "#5a4326", 3);
  } else if (style === "marks") {  // the lines between the cells
    for (let i = 1; i < rows; i++) line(`M8 ${i * SQ}H${width - 8}`, "#333", 5);
    for (let i = 1; i < columns; i++) line(`M${i * SQ} 8V${height - 8}`, "#333", 5);
  }
  cells.forEach((cellsOfRow, row) => cellsOfRow.forEach((letter, col) => {
    if (!letter) return;
    const [x, y] = cellXY(row, col, info);
    boardPiece(letter, x, y, style, svg).setAttribute("data-cell", `${row},${col}`);
  }));
  for (const key of dests) {
    const [row, col] = key.split(",").map(Number);
    const [x, y] = cellXY(row, col, info);
    el("circle", {cx: x + 50, cy: y + 50, r: 15, fill: "rgba(20, 90, 40, 0.7)", class: "dest", "data-cell": key,
                  ...none}, svg);
  }
}

function boardPiece(letter, x, y, style, svg) {
  const g = el("g", {class: "piece", "data-piece": letter, "pointer-events": "none"}, svg);
  const cx = x + 50, cy = y + 50;
  if (style === "marks" && letter === "X") {
    el("path", {d: `M${x + 24} ${y + 24}L${x + 76} ${y + 76}M${x + 76} ${y + 24}L${x + 24} ${y + 76}`,
                stroke: "#1f4e9c", "stroke-width": 11, "stroke-linecap": "round", fill: "none"}, g);
  } else if (style === "marks") {
    el("circle", {cx, cy, r: 28, fill: "none", stroke: "#b3261e", "stroke-width": 11}, g);
  } else if (style === "discs") {
    el("circle", {cx, cy, r: 40, fill: letter === "X" ? "#d7263d" : "#f5c518", stroke: "rgba(0, 0, 0, 0.3)",
                  "stroke-width": 3}, g);
  } else if (style === "stones") {
    el("circle", {cx, cy, r: 43, fill: letter === "X" ? "#1e1e1e" : "#fbfbf8", stroke: "#111", "stroke-width": 2.5}, g);
  } else {  // checkers: "b"/"B" the first player's man/king, "w"/"W" the second's
    const first = letter.toLowerCase() === "b";
    el("circle", {cx, cy, r: 38, fill: first ? "#2a2a2a" : "#fbfbf8", stroke: first ? "#0d0d0d" : "#1e1e1e",
                  "stroke-width": 3.2}, g);
    el("circle", {cx, cy, r: 27, fill: "none", stroke: first ? "#666" : "#bbb", "stroke-width": 2.5}, g);
    if (letter !== letter.toLowerCase()) {  // a king: a crown
      el("path", {d: `M${cx - 17} ${cy + 10}L${cx - 19} ${cy - 10}L${cx - 8} ${cy}L${cx} ${cy - 15}L${cx + 8} ${cy}`
                     + `L${cx + 19} ${cy - 10}L${cx + 17} ${cy + 10}Z`, fill: "#d4a017", stroke: "#7a5a00",
                  "stroke-width": 2}, g);
    }
  }
  return g;
}

init().catch((err) => say(`cannot reach the server: ${err.message}`));
