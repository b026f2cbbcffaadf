/*
 * module.c -- the Python bindings of the engine: the Rules and Position
 * types and the _core module (batched stepping is batch.c, the tree search
 * search.c, the rules engine engine.c).
 */
#include "core.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Rules                                                                    */

/* Rules(width, height, pieces, promotion, double_step, en_passant, castling,
 *       king_capture, stalemate_value, repetition, no_progress, insufficient)
 * castling: sequence of (colour, king_from, king_to, rook_from, rook_to), files
 * on that colour's back rank; at most two options per colour. */
static int Rules_init(RulesObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"width", "height", "pieces", "promotion", "double_step",
                             "en_passant", "castling", "king_capture", "stalemate_value",
                             "repetition", "no_progress", "insufficient", NULL};
    RulesSpec spec;
    PyObject *castling;
    memset(&spec, 0, sizeof spec);
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iissppOpiiip", kwlist, &spec.width, &spec.height, &spec.pieces,
                                     &spec.promotion, &spec.double_step, &spec.en_passant, &castling,
                                     &spec.king_capture, &spec.stalemate_value, &spec.repetition, &spec.no_progress,
                                     &spec.insufficient))
        return -1;
    PyObject *seq = PySequence_Fast(castling, "castling must be a sequence of 5-tuples");
    if (!seq) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > 4) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "at most two castling options per colour, got %zd in all", n);
        return -1;
    }
    spec.ncastling = (int)n;
    for (Py_ssize_t i = 0; i < n; i++) {
        int *c = spec.castling[i];
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "iiiii", &c[0], &c[1], &c[2], &c[3], &c[4])) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    char err[256];
    if (rules_init(&self->r, &spec, err, sizeof err) < 0) {
        PyErr_SetString(PyExc_ValueError, err);
        return -1;
    }
    return 0;
}

static PyObject *Rules_get_int(RulesObject *r, void *offset) {
    return PyLong_FromLong(*(int *)((char *)r + (Py_ssize_t)offset));
}

static PyGetSetDef Rules_getset[] = {
    {"width", (getter)Rules_get_int, NULL, "board width (files)", (void *)offsetof(RulesObject, r.width)},
    {"height", (getter)Rules_get_int, NULL, "board height (ranks)", (void *)offsetof(RulesObject, r.height)},
    {"num_squares", (getter)Rules_get_int, NULL, "width * height", (void *)offsetof(RulesObject, r.nsq)},
    {"num_planes", (getter)Rules_get_int, NULL, "move planes per square", (void *)offsetof(RulesObject, r.nplanes)},
    {"num_actions", (getter)Rules_get_int, NULL, "size of the action space", (void *)offsetof(RulesObject, r.naction)},
    {"max_distance", (getter)Rules_get_int, NULL, "longest queen move", (void *)offsetof(RulesObject, r.max_dist)},
    {"num_piece_types", (getter)Rules_get_int, NULL, "piece types in play", (void *)offsetof(RulesObject, r.npiece_types)},
    {NULL}};

/* plane_delta(plane) -> (df, dr, underpromotion type or 0) from the mover's view. */
static PyObject *Rules_plane_delta(RulesObject *self, PyObject *arg) {
    const Rules *r = &self->r;
    long plane = PyLong_AsLong(arg);
    if (plane == -1 && PyErr_Occurred()) return NULL;
    if (plane < 0 || plane >= r->nplanes) {
        PyErr_Format(PyExc_ValueError, "plane %ld outside [0, %d)", plane, r->nplanes);
        return NULL;
    }
    int under = plane >= 8 * r->max_dist + 8 ? (int[]){KNIGHT, BISHOP, ROOK}[(plane - 8 * r->max_dist - 8) % 3] : 0;
    return Py_BuildValue("iii", r->plane_df[plane], r->plane_dr[plane], under);
}

static PyMethodDef Rules_methods[] = {
    {"plane_delta", (PyCFunction)Rules_plane_delta, METH_O,
     "plane_delta(plane) -> (df, dr, underpromotion piece type or 0), from the mover's side"},
    {NULL}};

PyTypeObject RulesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minichess_envs._core.Rules",
    .tp_doc = "Board geometry, rule flags and encoding tables of one variant.",
    .tp_basicsize = sizeof(RulesObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Rules_init,
    .tp_getset = Rules_getset,
    .tp_methods = Rules_methods,
};

/* ------------------------------------------------------------------------ */
/* Helpers shared with batch.c and search.c                                 */

/* Borrow the C buffer of an argument with the expected item size and length. */
int get_array(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t count, int writable,
                     const char *what) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) return -1;
    if (view->itemsize != itemsize || view->len != itemsize * count) {
        PyErr_Format(PyExc_ValueError, "%s must hold %zd items of %zd bytes, got %zd bytes", what, count, itemsize,
                     view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* history must be 1..MAX_HISTORY; sets ValueError and returns -1 otherwise. */
int check_history(int history) {
    if (history >= 1 && history <= MAX_HISTORY) return 0;
    PyErr_Format(PyExc_ValueError, "history must be >= 1 and at most %d, got %d", MAX_HISTORY, history);
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Position: the Python face of a Game                                      */

PyObject *IllegalMoveError;

static int Position_init(PositionObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"rules", "variant", NULL};
    PyObject *rules, *variant = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!|O", kwlist, &RulesType, &rules, &variant))
        return -1;
    Py_INCREF(rules);
    Py_XSETREF(self->rules, (RulesObject *)rules);
    Py_INCREF(variant);
    Py_XSETREF(self->variant, variant);
    if (game_init(&self->g) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void Position_dealloc(PositionObject *self) {
    game_free(&self->g);
    Py_XDECREF(self->rules);
    Py_XDECREF(self->variant);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

#define CHECK_READY(self)                                                       \
    if (!(self)->rules) {                                                       \
        PyErr_SetString(PyExc_RuntimeError, "Position.__init__ was not called"); \
        return NULL;                                                            \
    }

static inline Board *cur(PositionObject *self) { return &self->g.hist[self->g.ply]; }

/* set_board(pieces, turn, castling, ep, halfmove, fullmove): new root, history cleared.
 * Checks what the engine relies on, not the rules of play (engine.py's set_fen
 * does that): piece codes of the variant's types, counters in range.  Castling
 * bits of options the variant lacks are dropped; the en-passant square is kept
 * only if a legal capture onto it exists (see make_move).  On error the
 * position is unchanged. */
static PyObject *Position_set_board(PositionObject *self, PyObject *args) {
    CHECK_READY(self);
    Py_buffer pieces;
    int turn, castling, ep;
    long long halfmove, fullmove;
    if (!PyArg_ParseTuple(args, "y*iiiLL", &pieces, &turn, &castling, &ep, &halfmove, &fullmove))
        return NULL;
    const Rules *r = &self->rules->r;
    if (pieces.len != r->nsq) {
        PyBuffer_Release(&pieces);
        return PyErr_Format(PyExc_ValueError, "expected %d squares, got %zd", r->nsq, pieces.len);
    }
    char err[160];
    Board b;
    int bad = board_set(r, &b, pieces.buf, turn, castling, ep, halfmove, fullmove, err, sizeof err);
    PyBuffer_Release(&pieces);
    if (bad) return PyErr_Format(PyExc_ValueError, "%s", err);
    self->g.hist[0] = b;
    self->g.ply = 0;
    game_invalidate(&self->g);
    Py_RETURN_NONE;
}

static PyObject *Position_copy(PositionObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"stack", NULL};
    int stack = 1;
    CHECK_READY(self);
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|p", kwlist, &stack)) return NULL;
    PositionObject *c = (PositionObject *)Py_TYPE(self)->tp_alloc(Py_TYPE(self), 0);
    if (!c) return NULL;
    Py_INCREF(self->rules);
    c->rules = self->rules;
    Py_INCREF(self->variant);
    c->variant = self->variant;
    int n = stack ? self->g.ply + 1 : 1;
    if (game_reserve(&c->g, n + 1) < 0) {
        Py_DECREF(c);
        return PyErr_NoMemory();
    }
    memcpy(c->g.hist, stack ? self->g.hist : cur(self), (size_t)n * sizeof(Board));
    c->g.ply = n - 1;
    /* The legal-move cache stays valid: same board. */
    c->g.nlegal = self->g.nlegal;
    if (self->g.nlegal > 0) {
        memcpy(c->g.legal, self->g.legal, (size_t)self->g.nlegal * sizeof(uint32_t));
        memcpy(c->g.legal_action, self->g.legal_action, (size_t)self->g.nlegal * sizeof(int16_t));
    }
    c->g.reason = stack ? self->g.reason : -1;
    c->g.winner = self->g.winner;
    return (PyObject *)c;
}

static PyObject *Position_legal_move_codes(PositionObject *self, PyObject *unused) {
    CHECK_READY(self);
    game_ensure_legal(&self->rules->r, &self->g);
    PyObject *list = PyList_New(self->g.nlegal);
    if (!list) return NULL;
    for (int i = 0; i < self->g.nlegal; i++) PyList_SET_ITEM(list, i, PyLong_FromUnsignedLong(self->g.legal[i]));
    return list;
}

static PyObject *Position_legal_actions(PositionObject *self, PyObject *unused) {
    CHECK_READY(self);
    game_ensure_legal(&self->rules->r, &self->g);
    PyObject *list = PyList_New(self->g.nlegal);
    if (!list) return NULL;
    for (int i = 0; i < self->g.nlegal; i++) PyList_SET_ITEM(list, i, PyLong_FromLong(self->g.legal_action[i]));
    return list;
}

static PyObject *Position_num_legal_moves(PositionObject *self, PyObject *unused) {
    CHECK_READY(self);
    game_ensure_legal(&self->rules->r, &self->g);
    return PyLong_FromLong(self->g.nlegal);
}

static int get_writable(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t count, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (view->itemsize != itemsize || view->len != itemsize * count) {
        PyErr_Format(PyExc_ValueError, "%s buffer must hold %zd items of %zd bytes, got %zd bytes",
                     what, count, itemsize, view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* write_action_mask(out): out[a] = 1 for legal actions, else 0 (int8/uint8/bool, num_actions). */
static PyObject *Position_write_action_mask(PositionObject *self, PyObject *arg) {
    CHECK_READY(self);
    Py_buffer view;
    if (get_writable(arg, &view, 1, self->rules->r.naction, "action mask") < 0) return NULL;
    game_ensure_legal(&self->rules->r, &self->g);
    uint8_t *out = view.buf;
    memset(out, 0, (size_t)view.len);
    for (int i = 0; i < self->g.nlegal; i++) out[self->g.legal_action[i]] = 1;
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

/* observation_channels(history, last_move) -> number of planes */
static PyObject *Position_observation_channels(PositionObject *self, PyObject *args) {
    int history, last_move;
    CHECK_READY(self);
    if (!PyArg_ParseTuple(args, "ip", &history, &last_move)) return NULL;
    if (check_history(history) < 0) return NULL;
    ObsLayout L = obs_layout(&self->rules->r, history, last_move);
    return PyLong_FromLong(L.channels);
}

/* write_observation(out, history, last_move, perspective=-1): fill a float32
 * (height, width, C) buffer as seen by `perspective` (0 White, 1 Black, -1 the side to move). */
static PyObject *Position_write_observation(PositionObject *self, PyObject *args) {
    PyObject *obj;
    int history, last_move, perspective = -1;
    CHECK_READY(self);
    if (!PyArg_ParseTuple(args, "Oip|i", &obj, &history, &last_move, &perspective)) return NULL;
    if (check_history(history) < 0) return NULL;
    if (perspective < -1 || perspective > 1)
        return PyErr_Format(PyExc_ValueError, "perspective must be 0 (White), 1 (Black) or -1, got %d", perspective);
    ObsLayout L = obs_layout(&self->rules->r, history, last_move);
    Py_buffer view;
    if (get_writable(obj, &view, 4, (Py_ssize_t)self->rules->r.nsq * L.channels, "observation") < 0) return NULL;
    if (view.format && strcmp(view.format, "f") != 0) {
        PyBuffer_Release(&view);
        return PyErr_Format(PyExc_ValueError, "observation buffer must be float32, got format '%s'", view.format);
    }
    write_observation(&self->rules->r, &self->g, &L, perspective < 0 ? cur(self)->side : perspective, view.buf);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

static PyObject *push_checked(PositionObject *self, uint32_t m) {
    if (game_push(&self->rules->r, &self->g, m) < 0) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* push(code): play a legal move given by its code. */
static PyObject *Position_push_code(PositionObject *self, PyObject *arg) {
    CHECK_READY(self);
    unsigned long m = PyLong_AsUnsignedLong(arg);
    if (m == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    game_ensure_legal(&self->rules->r, &self->g);
    for (int i = 0; i < self->g.nlegal; i++)
        if (self->g.legal[i] == m) return push_checked(self, (uint32_t)m);
    return PyErr_Format(IllegalMoveError, "move code %lu is not legal in this position", m);
}

/* push_action(action): play the legal move with this action index. */
static PyObject *Position_push_action(PositionObject *self, PyObject *arg) {
    CHECK_READY(self);
    if (PyBool_Check(arg)) return PyErr_Format(PyExc_TypeError, "action must be an integer, not bool");
    long a = PyLong_AsLong(arg);
    if (a == -1 && PyErr_Occurred()) return NULL;
    if (a < 0 || a >= self->rules->r.naction)
        return PyErr_Format(PyExc_ValueError, "action %ld is outside [0, %d)", a, self->rules->r.naction);
    game_ensure_legal(&self->rules->r, &self->g);
    for (int i = 0; i < self->g.nlegal; i++)
        if (self->g.legal_action[i] == a) return push_checked(self, self->g.legal[i]);
    return PyErr_Format(IllegalMoveError, "action %ld is not a legal move in this position", a);
}

/* action_uci(action) -> UCI string of the legal move with this action index. */
static PyObject *Position_action_uci(PositionObject *self, PyObject *arg) {
    CHECK_READY(self);
    if (PyBool_Check(arg)) return PyErr_Format(PyExc_TypeError, "action must be an integer, not bool");
    long a = PyLong_AsLong(arg);
    if (a == -1 && PyErr_Occurred()) return NULL;
    game_ensure_legal(&self->rules->r, &self->g);
    for (int i = 0; i < self->g.nlegal; i++) {
        if (self->g.legal_action[i] != a) continue;
        uint32_t m = self->g.legal[i];
        int W = self->rules->r.width, from = M_FROM(m), to = M_TO(m), promo = M_PROMO(m);
        char text[8];
        int n = snprintf(text, sizeof text, "%c%d%c%d", 'a' + from % W, from / W + 1, 'a' + to % W, to / W + 1);
        if (promo) text[n++] = ".pnbrqk"[promo];
        return PyUnicode_FromStringAndSize(text, n);
    }
    return PyErr_Format(IllegalMoveError, "action %ld is not a legal move in this position", a);
}

static PyObject *Position_pop_code(PositionObject *self, PyObject *unused) {
    CHECK_READY(self);
    if (self->g.ply == 0) {
        PyErr_SetString(PyExc_IndexError, "pop from a position with no moves played");
        return NULL;
    }
    uint32_t m = cur(self)->last_move;
    self->g.ply--;
    game_invalidate(&self->g);
    return PyLong_FromUnsignedLong(m);
}

/* encode(code) -> action of a move for the side to move (the move need not be legal). */
static PyObject *Position_encode(PositionObject *self, PyObject *arg) {
    CHECK_READY(self);
    unsigned long m = PyLong_AsUnsignedLong(arg);
    if (m == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    const Rules *r = &self->rules->r;
    int from = M_FROM(m), to = M_TO(m), side = cur(self)->side;
    if (from >= r->nsq || to >= r->nsq) return PyErr_Format(PyExc_ValueError, "move code %lu is off the board", m);
    int f = side == BLACK ? r->flip[from] : from, t = side == BLACK ? r->flip[to] : to;
    int df = t % r->width - f % r->width, dr = t / r->width - f / r->width;
    int promo = M_PROMO(m);
    int under = promo && promo != r->promo[0];
    if ((under && (dr != 1 || df < -1 || df > 1)) || (!under && r->delta_plane[(df + 7) * 15 + dr + 7] < 0))
        return PyErr_Format(PyExc_ValueError, "move code %lu has no action", m);
    return PyLong_FromLong(encode_move(r, side, (uint32_t)m));
}

/* outcome() -> (reason, winner): reason 0 = ongoing; winner 0 white, 1 black, -1 none. */
static PyObject *Position_outcome_code(PositionObject *self, PyObject *unused) {
    CHECK_READY(self);
    game_outcome(&self->rules->r, &self->g);
    return Py_BuildValue("ii", self->g.reason, self->g.winner);
}

/* material_balance() -> White's material minus Black's in pawns (kings do not count). */
static PyObject *Position_material_balance(PositionObject *self, PyObject *unused) {
    CHECK_READY(self);
    return PyLong_FromLong(material_balance(&self->rules->r, cur(self)));
}

static PyObject *Position_is_check(PositionObject *self, PyObject *unused) {
    CHECK_READY(self);
    return PyBool_FromLong(in_check(&self->rules->r, cur(self)));
}

static PyObject *Position_is_attacked_square(PositionObject *self, PyObject *args) {
    int sq, by;
    CHECK_READY(self);
    if (!PyArg_ParseTuple(args, "ii", &sq, &by)) return NULL;
    if (sq < 0 || sq >= self->rules->r.nsq) return PyErr_Format(PyExc_ValueError, "square %d is off the board", sq);
    return PyBool_FromLong(attacked(&self->rules->r, cur(self), sq, by ? BLACK : WHITE));
}

static PyObject *Position_perft(PositionObject *self, PyObject *arg) {
    CHECK_READY(self);
    long depth = PyLong_AsLong(arg);
    if (depth == -1 && PyErr_Occurred()) return NULL;
    if (depth < 0) return PyErr_Format(PyExc_ValueError, "depth must be >= 0, got %ld", depth);
    Board b = *cur(self);
    uint64_t n;
    Py_BEGIN_ALLOW_THREADS
    n = perft(&self->rules->r, &b, (int)depth);
    Py_END_ALLOW_THREADS
    return PyLong_FromUnsignedLongLong(n);
}

/* BoardState: the raw fields of one position of the history, a named tuple. */
static PyStructSequence_Field BoardState_fields[] = {
    {"pieces", "bytes, one per square (index rank * width + file): 0 empty, else type | color << 3"},
    {"turn", "color to move: 0 White, 1 Black"},
    {"castling", "castling rights, one bit each: bit 2 * color + i for the color's i-th castling option"},
    {"ep_square", "en-passant target square index, or -1"},
    {"halfmove", "plies since the last capture or pawn move"},
    {"fullmove", "move number, starting at 1"},
    {"repetitions", "times this position has occurred in the game"},
    {"last_move", "code of the move that led here (0 at the root)"},
    {NULL}};

static PyStructSequence_Desc BoardState_desc = {
    "minichess_envs._core.BoardState",
    "Raw fields of a position: board_state(ply) -> (pieces, turn, castling, ep_square, halfmove, fullmove, "
    "repetitions, last_move).",
    BoardState_fields, 8};

static PyTypeObject *BoardStateType;

/* board_state(ply=-1) -> BoardState(pieces, turn, castling, ep_square, halfmove, fullmove, repetitions, last_move) */
static PyObject *Position_board_state(PositionObject *self, PyObject *args) {
    int ply = -1;
    CHECK_READY(self);
    if (!PyArg_ParseTuple(args, "|i", &ply)) return NULL;
    if (ply < 0) ply += self->g.ply + 1;
    if (ply < 0 || ply > self->g.ply) return PyErr_Format(PyExc_IndexError, "ply %d out of range", ply);
    const Board *b = &self->g.hist[ply];
    PyObject *out = PyStructSequence_New(BoardStateType);
    if (!out) return NULL;
    PyObject *items[8] = {
        PyBytes_FromStringAndSize((const char *)b->sq, self->rules->r.nsq), PyLong_FromLong(b->side),
        PyLong_FromLong(b->castling), PyLong_FromLong(b->ep), PyLong_FromLong(b->halfmove),
        PyLong_FromLong(b->fullmove), PyLong_FromLong(b->reps), PyLong_FromUnsignedLong(b->last_move)};
    for (int i = 0; i < 8; i++) {
        if (!items[i]) {
            for (int k = i + 1; k < 8; k++) Py_XDECREF(items[k]);
            Py_DECREF(out);
            return NULL;
        }
        PyStructSequence_SET_ITEM(out, i, items[i]);
    }
    return out;
}

static PyObject *Position_move_codes(PositionObject *self, PyObject *unused) {
    CHECK_READY(self);
    PyObject *list = PyList_New(self->g.ply);
    if (!list) return NULL;
    for (int i = 1; i <= self->g.ply; i++)
        PyList_SET_ITEM(list, i - 1, PyLong_FromUnsignedLong(self->g.hist[i].last_move));
    return list;
}

static PyObject *Position_get_pieces(PositionObject *self, void *unused) {
    CHECK_READY(self);
    return PyBytes_FromStringAndSize((const char *)cur(self)->sq, self->rules->r.nsq);
}
static PyObject *Position_get_turn(PositionObject *self, void *unused) {
    CHECK_READY(self);
    return PyLong_FromLong(cur(self)->side);
}
static PyObject *Position_get_ply(PositionObject *self, void *unused) {
    CHECK_READY(self);
    return PyLong_FromLong(self->g.ply);
}
static PyObject *Position_get_hash(PositionObject *self, void *unused) {
    CHECK_READY(self);
    return PyLong_FromUnsignedLongLong(cur(self)->hash);
}
static PyObject *Position_get_halfmove(PositionObject *self, void *unused) {
    CHECK_READY(self);
    return PyLong_FromLong(cur(self)->halfmove);
}
static PyObject *Position_get_fullmove(PositionObject *self, void *unused) {
    CHECK_READY(self);
    return PyLong_FromLong(cur(self)->fullmove);
}
static PyObject *Position_get_reps(PositionObject *self, void *unused) {
    CHECK_READY(self);
    return PyLong_FromLong(cur(self)->reps);
}
static PyObject *Position_get_rules(PositionObject *self, void *unused) {
    CHECK_READY(self);
    Py_INCREF(self->rules);
    return (PyObject *)self->rules;
}
static PyObject *Position_get_variant(PositionObject *self, void *unused) {
    CHECK_READY(self);
    Py_INCREF(self->variant);
    return self->variant;
}

static PyGetSetDef Position_getset[] = {
    {"pieces", (getter)Position_get_pieces, NULL,
     "the board as bytes, one per square (rank * width + file): 0 empty, else type | color << 3", NULL},
    {"turn", (getter)Position_get_turn, NULL, "colour to move: 0 White, 1 Black", NULL},
    {"ply", (getter)Position_get_ply, NULL, "moves played since the root position", NULL},
    {"zobrist_hash", (getter)Position_get_hash, NULL, "64-bit Zobrist hash of the position", NULL},
    {"halfmove_clock", (getter)Position_get_halfmove, NULL, "plies since the last capture or pawn move", NULL},
    {"fullmove_number", (getter)Position_get_fullmove, NULL, "move number, starting at 1", NULL},
    {"repetitions", (getter)Position_get_reps, NULL, "times the current position has occurred in this game", NULL},
    {"rules", (getter)Position_get_rules, NULL, "the variant's compiled rules", NULL},
    {"variant", (getter)Position_get_variant, NULL, "the variant spec", NULL},
    {NULL}};

static PyMethodDef Position_methods[] = {
    {"set_board", (PyCFunction)Position_set_board, METH_VARARGS,
     "set_board(pieces, turn, castling, ep_square, halfmove, fullmove): a new root position from raw fields "
     "(no legality check; the history is cleared)"},
    {"copy", (PyCFunction)Position_copy, METH_VARARGS | METH_KEYWORDS,
     "copy(stack=True): a copy; with stack=False only the current board (no history)"},
    {"legal_move_codes", (PyCFunction)Position_legal_move_codes, METH_NOARGS, "legal moves as move codes"},
    {"legal_actions", (PyCFunction)Position_legal_actions, METH_NOARGS, "legal moves as action indices"},
    {"num_legal_moves", (PyCFunction)Position_num_legal_moves, METH_NOARGS, "number of legal moves"},
    {"write_action_mask", (PyCFunction)Position_write_action_mask, METH_O,
     "write_action_mask(out): fill a 1-byte buffer of num_actions with the legal-action mask"},
    {"observation_channels", (PyCFunction)Position_observation_channels, METH_VARARGS,
     "observation_channels(history, last_move) -> number of planes"},
    {"write_observation", (PyCFunction)Position_write_observation, METH_VARARGS,
     "write_observation(out, history, last_move, perspective=-1): fill a float32 (height, width, C) "
     "buffer seen by perspective (0 White, 1 Black, -1 the side to move)"},
    {"push_code", (PyCFunction)Position_push_code, METH_O, "play a legal move given by its code"},
    {"push_action", (PyCFunction)Position_push_action, METH_O, "play the legal move with this action index"},
    {"pop_code", (PyCFunction)Position_pop_code, METH_NOARGS, "take back the last move; returns its code"},
    {"action_uci", (PyCFunction)Position_action_uci, METH_O, "UCI string of the legal move with this action index"},
    {"encode", (PyCFunction)Position_encode, METH_O, "action index of a move code for the side to move"},
    {"outcome_code", (PyCFunction)Position_outcome_code, METH_NOARGS, "(reason, winner) of the current position"},
    {"is_check", (PyCFunction)Position_is_check, METH_NOARGS, "is the side to move in check?"},
    {"material_balance", (PyCFunction)Position_material_balance, METH_NOARGS,
     "White's material minus Black's in pawns (PIECE_VALUES; kings do not count)"},
    {"is_attacked_square", (PyCFunction)Position_is_attacked_square, METH_VARARGS,
     "is_attacked_square(square_index, by_color): is the square attacked by that color (0 White, 1 Black)?"},
    {"perft", (PyCFunction)Position_perft, METH_O, "perft(depth): leaf count of the legal-move tree"},
    {"board_state", (PyCFunction)Position_board_state, METH_VARARGS,
     "board_state(ply=-1) -> BoardState(pieces, turn, castling, ep_square, halfmove, fullmove, repetitions, "
     "last_move) of the position at ply (default: the current one)"},
    {"move_codes", (PyCFunction)Position_move_codes, METH_NOARGS, "codes of the moves played from the root"},
    {NULL}};

PyTypeObject PositionType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minichess_envs._core.Position",
    .tp_doc = "A game position with its history (C core; see minichess_envs.Position).",
    .tp_basicsize = sizeof(PositionObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Position_init,
    .tp_dealloc = (destructor)Position_dealloc,
    .tp_getset = Position_getset,
    .tp_methods = Position_methods,
};

static PyMethodDef core_functions[] = {
    {"step_random_duels", core_step_random_duels, METH_VARARGS,
     "step_random_duels(positions, actions, active, rng, steps, ply_limit, max_steps, reasons, winners, "
     "truncated, illegal, material): learner moves and uniformly random replies for a batch of games"},
    {"write_batch", core_write_batch, METH_VARARGS,
     "write_batch(positions, observations, masks, perspectives, history, last_move): observations and "
     "legal-action masks of a batch of games"},
    {NULL}};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "_core", "Rules engine of minichess-envs (C).", -1, core_functions,
};

PyMODINIT_FUNC PyInit__core(void) {
    if (PyType_Ready(&RulesType) < 0 || PyType_Ready(&PositionType) < 0 || PyType_Ready(&SearchType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&core_module);
    if (!m) return NULL;
    BoardStateType = PyStructSequence_NewType(&BoardState_desc);
    if (!BoardStateType) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject *values = Py_BuildValue("(iiiiiii)", PIECE_VALUE[0], PIECE_VALUE[1], PIECE_VALUE[2], PIECE_VALUE[3],
                                     PIECE_VALUE[4], PIECE_VALUE[5], PIECE_VALUE[6]);
    if (!values || PyModule_AddObject(m, "PIECE_VALUES", values) < 0 ||
        PyModule_AddObject(m, "BoardState", (PyObject *)BoardStateType) < 0) {
        Py_XDECREF(values);
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(BoardStateType);
    IllegalMoveError = PyErr_NewExceptionWithDoc(
        "minichess_envs._core.IllegalMoveError", "A move or action that is not legal in the position.",
        PyExc_ValueError, NULL);
    if (!IllegalMoveError) return NULL;
    Py_INCREF(&RulesType);
    Py_INCREF(&PositionType);
    Py_INCREF(IllegalMoveError);
    Py_INCREF(&SearchType);
    if (PyModule_AddObject(m, "Search", (PyObject *)&SearchType) < 0 ||
        PyModule_AddObject(m, "Rules", (PyObject *)&RulesType) < 0 ||
        PyModule_AddObject(m, "Position", (PyObject *)&PositionType) < 0 ||
        PyModule_AddObject(m, "IllegalMoveError", IllegalMoveError) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyModule_AddIntConstant(m, "MAX_MOVES", MAX_MOVES);
    PyModule_AddIntConstant(m, "FLAG_DOUBLE_STEP", F_DOUBLE);
    PyModule_AddIntConstant(m, "FLAG_EN_PASSANT", F_EP);
    PyModule_AddIntConstant(m, "FLAG_CASTLING", F_CASTLE);
    PyModule_AddIntConstant(m, "MAX_HISTORY", MAX_HISTORY);
    PyModule_AddIntConstant(m, "MAX_COUNTER", MAX_COUNTER);
    return m;
}
