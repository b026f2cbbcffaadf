/*
 * _core.c -- the rules engine of minichess-envs.
 *
 * One engine for every board from 3x3 to 8x8.  Python builds a `Rules` object
 * from a variant spec (minichess_envs/variants.py) and plays on `Position`
 * objects; FEN parsing, validation and printing live in Python
 * (minichess_envs/engine.py).  Everything that runs per move lives here:
 * move generation, make/unmake, check and outcome detection, Zobrist hashing,
 * repetition counting, the action encoding, the action mask and the
 * observation planes.
 *
 * Why C: a pure-Python engine measured 8-15x too slow for the project's speed
 * targets (docs/benchmarks.md); the extension needs only a C compiler at
 * install time and no runtime dependency.
 *
 * Conventions
 *   square   sq = rank * width + file, a1 = 0 (rank 0 is White's back rank)
 *   piece    type | colour << 3, type PAWN..KING = 1..6, colour WHITE=0 BLACK=1
 *   move     from | to << 6 | promotion type << 12 | flags << 15
 *   action   (file * height + rank) * planes + plane, squares seen from the
 *            side to move (ranks flipped for Black), planes ordered as
 *            AlphaZero / PettingZoo chess_v6 (see encode_move).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Constants                                                                */

enum { EMPTY = 0, PAWN = 1, KNIGHT = 2, BISHOP = 3, ROOK = 4, QUEEN = 5, KING = 6 };
enum { WHITE = 0, BLACK = 1 };

#define PIECE(c, t) ((int8_t)((t) | ((c) << 3)))
#define TYPE(p) ((p) & 7)
#define COLOR(p) ((p) >> 3)

#define MAX_SIDE 8
#define MAX_SQ 64
#define MAX_PROMO 5
/* MAX_MOVES bounds the moves of any position, reachable or not, on any board up
 * to 8x8 with any pieces (the core is also handed raw boards, e.g. read from
 * tablebase files), so no move list can overflow.  Proof: a move goes from a
 * square holding a piece of the mover to a square holding none of the mover's
 * pieces (empty or an enemy piece; an en-passant target is empty), with two
 * exceptions counted below.  A pair (from, to) carries at most one move: the
 * piece on `from` has one type; a pawn pushes, double-steps or captures onto a
 * given square in exactly one way; a king step and a castling move never share
 * a target (castling moves the king two or more files, and a colour's two
 * castling moves have different king targets).  With k of the mover's pieces on
 * n squares there are at most k * (n - k) <= n^2 / 4 such pairs.  Exceptions:
 * (a) a promotion pair carries one move per promotion piece (at most
 * MAX_PROMO): promotions land on the last rank, whose at most 8 squares are
 * each reached from at most 3 pawns (a push and two captures), adding at most
 * 8 * 3 * (MAX_PROMO - 1) moves; (b) castling may land the king on its own
 * rook's square (Chess960 style): at most 2 such moves.
 * On 8x8: 64 * 64 / 4 + 96 + 2 = 1122.  (A reachable chess position has at
 * most 218 legal moves; a crafted board full of queens has 262.) */
#define MAX_MOVES (MAX_SQ * MAX_SQ / 4 + MAX_SIDE * 3 * (MAX_PROMO - 1) + 2)
/* Longest observation history accepted: keeps channels * squares far from
 * overflow (AlphaZero used 8; no game here is longer than a few hundred plies). */
#define MAX_HISTORY 1024
/* Counters (halfmove clock, fullmove number) are int32 and saturate here. */
#define MAX_COUNTER INT32_MAX
#define MAX_PLANES (8 * (MAX_SIDE - 1) + 8 + 9)

/* Piece values in pawns, by type: the project's one table (Python reads it as
 * minichess_envs.engine.PIECE_VALUES). Material counts every piece but the
 * king; the king's value only ranks captures, above any other piece. */
static const int PIECE_VALUE[8] = {0, 1, 3, 3, 5, 9, 100, 0};

#define F_DOUBLE 1 /* pawn double step */
#define F_EP 2     /* en-passant capture */
#define F_CASTLE 4 /* castling, encoded as the king's move */

#define MOVE(f, t, pr, fl) \
    ((uint32_t)(f) | ((uint32_t)(t) << 6) | ((uint32_t)(pr) << 12) | ((uint32_t)(fl) << 15))
#define M_FROM(m) ((int)((m) & 63))
#define M_TO(m) ((int)(((m) >> 6) & 63))
#define M_PROMO(m) ((int)(((m) >> 12) & 7))
#define M_FLAGS(m) ((int)(((m) >> 15) & 7))

/* Termination reasons, mirrored by minichess_envs.engine.Termination. */
enum {
    ONGOING = 0,
    CHECKMATE = 1,
    STALEMATE = 2,
    KING_CAPTURE = 3,
    INSUFFICIENT_MATERIAL = 4,
    REPETITION = 5,
    NO_PROGRESS = 6,
};

/* Directions, in PettingZoo/AlphaZero queen-plane order:
 * (df, dr) over df in -1..1, dr in -1..1, skipping (0, 0). */
static const int DIR_DF[8] = {-1, -1, -1, 0, 0, 1, 1, 1};
static const int DIR_DR[8] = {-1, 0, 1, -1, 1, -1, 0, 1};
/* Knight jumps, same order as PettingZoo: df in -2..2, dr in -2..2. */
static const int KN_DF[8] = {-2, -2, -1, -1, 1, 1, 2, 2};
static const int KN_DR[8] = {-1, 1, -2, 2, -2, 2, -1, 1};

static inline int is_diagonal(int d) { return DIR_DF[d] != 0 && DIR_DR[d] != 0; }

/* ------------------------------------------------------------------------ */
/* Rules: board geometry, rule flags, encoding tables, Zobrist keys          */

typedef struct {
    int8_t king_from, king_to, rook_from, rook_to;
    uint8_t right; /* bit in Board.castling */
} Castle;

typedef struct {
    PyObject_HEAD
    int width, height, nsq;
    int max_dist;      /* max(width, height) - 1 */
    int nplanes;       /* 8 * max_dist + 8 + 9 */
    int naction;       /* nsq * nplanes */
    int king_capture;  /* 1: the game is won by capturing the king */
    int double_step, en_passant;
    int stalemate_value; /* for the stalemated side: 0 draw, -1 loss, +1 win */
    int repetition;      /* n-fold repetition draw, 0 = off */
    int no_progress;     /* plies without capture or pawn move for a draw, 0 = off */
    int insufficient;    /* draw when neither side can possibly mate */
    int npromo;
    int8_t promo[MAX_PROMO]; /* promotion types; promo[0] is the plain-move promotion */
    int ncastle[2];
    Castle castle[2][2];
    uint8_t castle_keep[MAX_SQ]; /* rights kept when a move touches the square */
    /* observation layout */
    int piece_plane[8]; /* piece type -> index among the variant's types, -1 absent */
    int npiece_types;
    /* geometry */
    int8_t ray[MAX_SQ][8][MAX_SIDE];
    uint8_t ray_len[MAX_SQ][8];
    int8_t knight[MAX_SQ][8];
    uint8_t nknight[MAX_SQ];
    int8_t kingstep[MAX_SQ][8];
    uint8_t nkingstep[MAX_SQ];
    int8_t pawn_caps[2][MAX_SQ][2]; /* squares a pawn of colour c on sq attacks */
    uint8_t npawn_caps[2][MAX_SQ];
    int8_t pawn_from[2][MAX_SQ][2]; /* squares from which a pawn of colour c attacks sq */
    uint8_t npawn_from[2][MAX_SQ];
    uint8_t aligned[MAX_SQ][MAX_SQ]; /* 1 if the squares share a rank, file or diagonal */
    int8_t flip[MAX_SQ];             /* rank mirror: the board seen by Black */
    /* action encoding */
    int8_t delta_plane[15 * 15]; /* (df + 7) * 15 + dr + 7 -> plane, -1 if none */
    int8_t plane_df[MAX_PLANES], plane_dr[MAX_PLANES];
    /* Zobrist keys */
    uint64_t z_piece[16][MAX_SQ];
    uint64_t z_side;
    uint64_t z_castle[16];
    uint64_t z_ep[MAX_SQ];
} RulesObject;

static PyTypeObject RulesType;

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static int piece_type_from_char(int c) {
    switch (c) {
    case 'p': case 'P': return PAWN;
    case 'n': case 'N': return KNIGHT;
    case 'b': case 'B': return BISHOP;
    case 'r': case 'R': return ROOK;
    case 'q': case 'Q': return QUEEN;
    case 'k': case 'K': return KING;
    }
    return 0;
}

static int on_board(const RulesObject *r, int f, int rk) {
    return f >= 0 && f < r->width && rk >= 0 && rk < r->height;
}

static void rules_build_tables(RulesObject *r) {
    int W = r->width, H = r->height;
    for (int s = 0; s < r->nsq; s++) {
        int f = s % W, rk = s / W;
        r->flip[s] = (int8_t)((H - 1 - rk) * W + f);
        for (int d = 0; d < 8; d++) {
            int n = 0, ff = f + DIR_DF[d], rr = rk + DIR_DR[d];
            while (on_board(r, ff, rr)) {
                r->ray[s][d][n++] = (int8_t)(rr * W + ff);
                ff += DIR_DF[d];
                rr += DIR_DR[d];
            }
            r->ray_len[s][d] = (uint8_t)n;
        }
        int n = 0;
        for (int k = 0; k < 8; k++)
            if (on_board(r, f + KN_DF[k], rk + KN_DR[k]))
                r->knight[s][n++] = (int8_t)((rk + KN_DR[k]) * W + f + KN_DF[k]);
        r->nknight[s] = (uint8_t)n;
        n = 0;
        for (int d = 0; d < 8; d++)
            if (on_board(r, f + DIR_DF[d], rk + DIR_DR[d]))
                r->kingstep[s][n++] = (int8_t)((rk + DIR_DR[d]) * W + f + DIR_DF[d]);
        r->nkingstep[s] = (uint8_t)n;
        for (int c = 0; c < 2; c++) {
            int fwd = c == WHITE ? 1 : -1;
            int nc = 0, nf = 0;
            for (int df = -1; df <= 1; df += 2) {
                if (on_board(r, f + df, rk + fwd))
                    r->pawn_caps[c][s][nc++] = (int8_t)((rk + fwd) * W + f + df);
                if (on_board(r, f + df, rk - fwd))
                    r->pawn_from[c][s][nf++] = (int8_t)((rk - fwd) * W + f + df);
            }
            r->npawn_caps[c][s] = (uint8_t)nc;
            r->npawn_from[c][s] = (uint8_t)nf;
        }
        for (int t = 0; t < r->nsq; t++) {
            int df = t % W - f, dr = t / W - rk;
            r->aligned[s][t] = (uint8_t)(s != t && (df == 0 || dr == 0 || df == dr || df == -dr));
        }
    }
    /* Action planes: queen moves (distance-major), knight jumps, underpromotions. */
    memset(r->delta_plane, -1, sizeof r->delta_plane);
    for (int dist = 1; dist <= r->max_dist; dist++)
        for (int d = 0; d < 8; d++) {
            int plane = (dist - 1) * 8 + d;
            r->plane_df[plane] = (int8_t)(DIR_DF[d] * dist);
            r->plane_dr[plane] = (int8_t)(DIR_DR[d] * dist);
            r->delta_plane[(DIR_DF[d] * dist + 7) * 15 + DIR_DR[d] * dist + 7] = (int8_t)plane;
        }
    for (int k = 0; k < 8; k++) {
        int plane = 8 * r->max_dist + k;
        r->plane_df[plane] = (int8_t)KN_DF[k];
        r->plane_dr[plane] = (int8_t)KN_DR[k];
        r->delta_plane[(KN_DF[k] + 7) * 15 + KN_DR[k] + 7] = (int8_t)plane;
    }
    for (int k = 0; k < 9; k++) {
        int plane = 8 * r->max_dist + 8 + k;
        r->plane_df[plane] = (int8_t)(k / 3 - 1);
        r->plane_dr[plane] = 1;
    }
    /* Fixed seed: hashes are stable across runs and processes. */
    uint64_t state = 0x6D696E6963686573ULL; /* "minichess" */
    for (int p = 0; p < 16; p++)
        for (int s = 0; s < MAX_SQ; s++) r->z_piece[p][s] = splitmix64(&state);
    r->z_side = splitmix64(&state);
    for (int c = 0; c < 16; c++) r->z_castle[c] = c ? splitmix64(&state) : 0;
    for (int s = 0; s < MAX_SQ; s++) r->z_ep[s] = splitmix64(&state);
}

/* Rules(width, height, pieces, promotion, double_step, en_passant, castling,
 *       king_capture, stalemate_value, repetition, no_progress, insufficient)
 * castling: sequence of (colour, king_from, king_to, rook_from, rook_to), files
 * on that colour's back rank; at most two options per colour. */
static int Rules_init(RulesObject *r, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"width", "height", "pieces", "promotion", "double_step",
                             "en_passant", "castling", "king_capture", "stalemate_value",
                             "repetition", "no_progress", "insufficient", NULL};
    int W, H, dbl, ep, kc, stal, rep, nprog, insuf;
    const char *pieces, *promotion;
    PyObject *castling;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "iissppOpiiip", kwlist, &W, &H, &pieces,
                                     &promotion, &dbl, &ep, &castling, &kc, &stal, &rep,
                                     &nprog, &insuf))
        return -1;
    if (W < 1 || H < 1 || W > MAX_SIDE || H > MAX_SIDE) {
        PyErr_Format(PyExc_ValueError, "board %dx%d is outside 1x1..8x8", W, H);
        return -1;
    }
    r->width = W;
    r->height = H;
    r->nsq = W * H;
    r->max_dist = (W > H ? W : H) - 1;
    if (r->max_dist < 1) r->max_dist = 1;
    r->nplanes = 8 * r->max_dist + 8 + 9;
    r->naction = r->nsq * r->nplanes;
    r->double_step = dbl;
    r->en_passant = ep;
    r->king_capture = kc;
    r->stalemate_value = stal;
    r->repetition = rep;
    r->no_progress = nprog;
    r->insufficient = insuf;
    for (int t = 0; t < 8; t++) r->piece_plane[t] = -1;
    r->npiece_types = 0;
    for (int t = PAWN; t <= KING; t++) /* canonical order P N B R Q K */
        if (strchr(pieces, "?PNBRQK"[t]) || strchr(pieces, "?pnbrqk"[t]))
            r->piece_plane[t] = r->npiece_types++;
    r->npromo = 0;
    for (const char *c = promotion; *c; c++) {
        int t = piece_type_from_char(*c);
        if (!t || t == PAWN || t == KING || r->npromo >= MAX_PROMO || r->piece_plane[t] < 0) {
            PyErr_Format(PyExc_ValueError, "bad promotion piece list '%s' (at most %d of N, B, R, Q, all in pieces '%s')",
                         promotion, MAX_PROMO, pieces);
            return -1;
        }
        if (r->npromo > 0 && t != KNIGHT && t != BISHOP && t != ROOK) {
            PyErr_Format(PyExc_ValueError,
                         "promotion '%s': only the first piece may be other than N, B, R "
                         "(the others are encoded as underpromotions)",
                         promotion);
            return -1;
        }
        r->promo[r->npromo++] = (int8_t)t;
    }
    rules_build_tables(r);
    memset(r->castle_keep, 0xFF, sizeof r->castle_keep);
    r->ncastle[0] = r->ncastle[1] = 0;
    PyObject *seq = PySequence_Fast(castling, "castling must be a sequence of 5-tuples");
    if (!seq) return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        int c, kf, kt, rf, rt;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "iiiii", &c, &kf, &kt, &rf, &rt)) {
            Py_DECREF(seq);
            return -1;
        }
        if (c < 0 || c > 1 || r->ncastle[c] >= 2 || kf < 0 || kt < 0 || rf < 0 || rt < 0 || kf >= W ||
            kt >= W || rf >= W || rt >= W || kf == rf || (kt - kf < 2 && kf - kt < 2) ||
            (r->ncastle[c] == 1 && r->castle[c][0].king_to % W == kt)) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_ValueError,
                            "bad castling option: colour 0/1, at most two per colour with different king "
                            "targets, files on the board, king and rook on different files, king moving >= 2 files");
            return -1;
        }
        int rank = c == WHITE ? 0 : H - 1, k = r->ncastle[c]++;
        Castle *cs = &r->castle[c][k];
        cs->king_from = (int8_t)(rank * W + kf);
        cs->king_to = (int8_t)(rank * W + kt);
        cs->rook_from = (int8_t)(rank * W + rf);
        cs->rook_to = (int8_t)(rank * W + rt);
        cs->right = (uint8_t)(1 << (c * 2 + k));
        r->castle_keep[cs->king_from] &= (uint8_t)~(3 << (c * 2));
        r->castle_keep[cs->rook_from] &= (uint8_t)~cs->right;
    }
    Py_DECREF(seq);
    return 0;
}

static PyObject *Rules_get_int(RulesObject *r, void *offset) {
    return PyLong_FromLong(*(int *)((char *)r + (Py_ssize_t)offset));
}

static PyGetSetDef Rules_getset[] = {
    {"width", (getter)Rules_get_int, NULL, "board width (files)", (void *)offsetof(RulesObject, width)},
    {"height", (getter)Rules_get_int, NULL, "board height (ranks)", (void *)offsetof(RulesObject, height)},
    {"num_squares", (getter)Rules_get_int, NULL, "width * height", (void *)offsetof(RulesObject, nsq)},
    {"num_planes", (getter)Rules_get_int, NULL, "move planes per square", (void *)offsetof(RulesObject, nplanes)},
    {"num_actions", (getter)Rules_get_int, NULL, "size of the action space", (void *)offsetof(RulesObject, naction)},
    {"max_distance", (getter)Rules_get_int, NULL, "longest queen move", (void *)offsetof(RulesObject, max_dist)},
    {"num_piece_types", (getter)Rules_get_int, NULL, "piece types in play", (void *)offsetof(RulesObject, npiece_types)},
    {NULL}};

/* plane_delta(plane) -> (df, dr, underpromotion type or 0) from the mover's view. */
static PyObject *Rules_plane_delta(RulesObject *r, PyObject *arg) {
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

static PyTypeObject RulesType = {
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
/* Board: one position, plain data, copied by value                         */

typedef struct {
    int8_t sq[MAX_SQ];
    uint64_t hash;
    uint32_t last_move; /* the move that led here, 0 at the root */
    int32_t fullmove;   /* 1..MAX_COUNTER, saturating */
    int32_t halfmove;   /* plies since the last capture or pawn move, 0..MAX_COUNTER, saturating */
    int8_t ep;          /* en-passant target square, -1 if none */
    uint8_t side;       /* colour to move */
    uint8_t castling;   /* rights: bit (colour * 2 + option) */
    uint8_t reps;       /* occurrences of this position in the game, this one included */
    int8_t king[2];     /* king squares, -1 once captured */
} Board;

static int attacked(const RulesObject *r, const Board *b, int sq, int by) {
    const int8_t *s = b->sq;
    for (int k = 0; k < r->npawn_from[by][sq]; k++)
        if (s[r->pawn_from[by][sq][k]] == PIECE(by, PAWN)) return 1;
    for (int k = 0; k < r->nknight[sq]; k++)
        if (s[r->knight[sq][k]] == PIECE(by, KNIGHT)) return 1;
    for (int k = 0; k < r->nkingstep[sq]; k++)
        if (s[r->kingstep[sq][k]] == PIECE(by, KING)) return 1;
    for (int d = 0; d < 8; d++) {
        const int8_t *ray = r->ray[sq][d];
        for (int k = 0; k < r->ray_len[sq][d]; k++) {
            int p = s[ray[k]];
            if (!p) continue;
            if (COLOR(p) == by) {
                int t = TYPE(p);
                if (t == QUEEN || t == (is_diagonal(d) ? BISHOP : ROOK)) return 1;
            }
            break;
        }
    }
    return 0;
}

static inline int in_check(const RulesObject *r, const Board *b) {
    int k = b->king[b->side];
    return k >= 0 && attacked(r, b, k, b->side ^ 1);
}

static inline void add_pawn_moves(const RulesObject *r, int us, int from, int to, uint32_t *out, int *n) {
    int last = us == WHITE ? r->height - 1 : 0;
    if (to / r->width == last) {
        for (int k = 0; k < r->npromo; k++) out[(*n)++] = MOVE(from, to, r->promo[k], 0);
    } else {
        out[(*n)++] = MOVE(from, to, 0, 0);
    }
}

/* All pseudo-legal moves of the side to move (own king may be left attacked). */
static int gen_pseudo(const RulesObject *r, const Board *b, uint32_t *out) {
    int n = 0, us = b->side, them = us ^ 1, W = r->width;
    const int8_t *s = b->sq;
    for (int from = 0; from < r->nsq; from++) {
        int p = s[from];
        if (!p || COLOR(p) != us) continue;
        switch (TYPE(p)) {
        case PAWN: {
            int rank = from / W, fwd = us == WHITE ? W : -W;
            int next_rank = rank + (us == WHITE ? 1 : -1);
            if (next_rank >= 0 && next_rank < r->height && !s[from + fwd]) {
                add_pawn_moves(r, us, from, from + fwd, out, &n);
                int start_rank = us == WHITE ? 1 : r->height - 2;
                int two_rank = next_rank + (us == WHITE ? 1 : -1);
                if (r->double_step && rank == start_rank && two_rank >= 0 && two_rank < r->height &&
                    !s[from + 2 * fwd])
                    out[n++] = MOVE(from, from + 2 * fwd, 0, F_DOUBLE);
            }
            for (int k = 0; k < r->npawn_caps[us][from]; k++) {
                int to = r->pawn_caps[us][from][k];
                if (s[to] && COLOR(s[to]) == them)
                    add_pawn_moves(r, us, from, to, out, &n);
                else if (to == b->ep)
                    out[n++] = MOVE(from, to, 0, F_EP);
            }
            break;
        }
        case KNIGHT:
            for (int k = 0; k < r->nknight[from]; k++) {
                int to = r->knight[from][k];
                if (!s[to] || COLOR(s[to]) == them) out[n++] = MOVE(from, to, 0, 0);
            }
            break;
        case KING:
            for (int k = 0; k < r->nkingstep[from]; k++) {
                int to = r->kingstep[from][k];
                if (!s[to] || COLOR(s[to]) == them) out[n++] = MOVE(from, to, 0, 0);
            }
            for (int i = 0; i < r->ncastle[us]; i++) {
                const Castle *c = &r->castle[us][i];
                if (!(b->castling & c->right) || from != c->king_from ||
                    s[c->rook_from] != PIECE(us, ROOK))
                    continue;
                /* Every square the king or rook crosses or lands on is empty,
                 * except the two castling pieces themselves (FIDE 960 rule). */
                int lo = c->king_from, hi = c->king_from, ok = 1;
                int sqs[4] = {c->king_from, c->king_to, c->rook_from, c->rook_to};
                for (int k = 0; k < 4; k++) {
                    if (sqs[k] < lo) lo = sqs[k];
                    if (sqs[k] > hi) hi = sqs[k];
                }
                for (int t = lo; t <= hi && ok; t++)
                    if (s[t] && t != c->king_from && t != c->rook_from) ok = 0;
                /* The king may not castle out of, through or into check. */
                int step = c->king_to > c->king_from ? 1 : -1;
                for (int t = c->king_from; ok; t += step) {
                    if (attacked(r, b, t, them)) ok = 0;
                    if (t == c->king_to) break;
                }
                if (ok) out[n++] = MOVE(c->king_from, c->king_to, 0, F_CASTLE);
            }
            break;
        default: { /* bishop, rook, queen */
            int t = TYPE(p);
            for (int d = 0; d < 8; d++) {
                if ((t == BISHOP && !is_diagonal(d)) || (t == ROOK && is_diagonal(d))) continue;
                const int8_t *ray = r->ray[from][d];
                for (int k = 0; k < r->ray_len[from][d]; k++) {
                    int to = ray[k];
                    if (!s[to]) {
                        out[n++] = MOVE(from, to, 0, 0);
                        continue;
                    }
                    if (COLOR(s[to]) == them) out[n++] = MOVE(from, to, 0, 0);
                    break;
                }
            }
        }
        }
    }
    return n;
}

static void make_move(const RulesObject *r, Board *b, uint32_t m);

/* Can the side to move capture en passant onto `target` with a legal move?
 * Needs target empty and an enemy pawn just past it; with king capture every
 * pseudo-legal capture is legal, otherwise the capture must not leave the own
 * king attacked (e.g. by a rook along the rank both pawns leave). */
static int ep_capture_legal(const RulesObject *r, const Board *b, int target) {
    int us = b->side, them = us ^ 1;
    int capsq = target + (us == WHITE ? -r->width : r->width);
    if (target < 0 || target >= r->nsq || capsq < 0 || capsq >= r->nsq || b->sq[target] ||
        b->sq[capsq] != PIECE(them, PAWN))
        return 0;
    for (int k = 0; k < r->npawn_from[us][target]; k++) {
        int from = r->pawn_from[us][target][k];
        if (b->sq[from] != PIECE(us, PAWN)) continue;
        if (r->king_capture) return 1;
        if (b->king[us] < 0 || b->king[them] < 0) return 0; /* game over: no legal moves */
        Board c = *b;
        c.ep = (int8_t)target;
        make_move(r, &c, MOVE(from, target, 0, F_EP));
        if (!attacked(r, &c, c.king[us], them)) return 1;
    }
    return 0;
}

/* Play a pseudo-legal move on b in place, keeping hash, rights and clocks. */
static void make_move(const RulesObject *r, Board *b, uint32_t m) {
    int from = M_FROM(m), to = M_TO(m), promo = M_PROMO(m), flags = M_FLAGS(m);
    int us = b->side, them = us ^ 1;
    int8_t *s = b->sq;
    uint64_t h = b->hash;
    if (b->ep >= 0) h ^= r->z_ep[b->ep];
    h ^= r->z_castle[b->castling];
    b->halfmove += b->halfmove < MAX_COUNTER;
    int ep_target = -1;
    b->ep = -1;
    if (flags & F_CASTLE) {
        const Castle *c = &r->castle[us][0];
        if (r->ncastle[us] > 1 && r->castle[us][1].king_to == to) c = &r->castle[us][1];
        int8_t king = PIECE(us, KING), rook = PIECE(us, ROOK);
        s[c->king_from] = 0;
        s[c->rook_from] = 0;
        s[c->king_to] = king;
        s[c->rook_to] = rook;
        h ^= r->z_piece[king][c->king_from] ^ r->z_piece[king][c->king_to];
        h ^= r->z_piece[rook][c->rook_from] ^ r->z_piece[rook][c->rook_to];
        b->king[us] = c->king_to;
    } else {
        int p = s[from], cap = s[to];
        if (cap) {
            h ^= r->z_piece[cap][to];
            b->halfmove = 0;
            if (TYPE(cap) == KING) b->king[them] = -1;
        }
        int np = promo ? PIECE(us, promo) : p;
        h ^= r->z_piece[p][from] ^ r->z_piece[np][to];
        s[from] = 0;
        s[to] = (int8_t)np;
        if (TYPE(p) == PAWN) {
            b->halfmove = 0;
            if (flags & F_EP) {
                int capsq = to + (us == WHITE ? -r->width : r->width);
                h ^= r->z_piece[s[capsq]][capsq];
                s[capsq] = 0;
            } else if ((flags & F_DOUBLE) && r->en_passant) {
                ep_target = (from + to) / 2; /* recorded below if a legal capture exists */
            }
        } else if (TYPE(p) == KING) {
            b->king[us] = (int8_t)to;
        }
    }
    b->castling &= r->castle_keep[from] & r->castle_keep[to];
    h ^= r->z_castle[b->castling];
    h ^= r->z_side;
    if (us == BLACK) b->fullmove += b->fullmove < MAX_COUNTER;
    b->side = (uint8_t)them;
    b->last_move = m;
    b->hash = h;
    /* The en-passant target is part of the position only when a legal capture
     * onto it exists (FIDE 9.2.3 for repetitions; FEN as python-chess writes it),
     * so positions that differ only by an unusable target hash alike. */
    if (ep_target >= 0 && ep_capture_legal(r, b, ep_target)) {
        b->ep = (int8_t)ep_target;
        b->hash ^= r->z_ep[ep_target];
    }
}

/* Legal moves.  With king capture every pseudo-legal move is legal; with
 * checkmate a move is legal when it leaves the own king unattacked. */
static int gen_legal(const RulesObject *r, const Board *b, uint32_t *out) {
    if (b->king[WHITE] < 0 || b->king[BLACK] < 0) return 0; /* game already won */
    uint32_t pseudo[MAX_MOVES];
    int np = gen_pseudo(r, b, pseudo);
    if (r->king_capture) {
        memcpy(out, pseudo, (size_t)np * sizeof *out);
        return np;
    }
    int us = b->side, ksq = b->king[us], n = 0;
    int check = attacked(r, b, ksq, us ^ 1);
    for (int i = 0; i < np; i++) {
        uint32_t m = pseudo[i];
        int from = M_FROM(m);
        /* A non-king move off every line through the king cannot expose it. */
        if (!check && from != ksq && !(M_FLAGS(m) & F_EP) && !r->aligned[ksq][from]) {
            out[n++] = m;
            continue;
        }
        Board c = *b;
        make_move(r, &c, m);
        if (!attacked(r, &c, c.king[us], us ^ 1)) out[n++] = m;
    }
    return n;
}

/* White's material minus Black's, in pawns (PIECE_VALUE, kings not counted). */
static int material_balance(const RulesObject *r, const Board *b) {
    int balance = 0;
    for (int s = 0; s < r->nsq; s++) {
        int p = b->sq[s];
        if (p && TYPE(p) != KING) balance += COLOR(p) == WHITE ? PIECE_VALUE[TYPE(p)] : -PIECE_VALUE[TYPE(p)];
    }
    return balance;
}

/* Neither side can possibly checkmate: bare kings, a single minor piece, or
 * bishops only, all on squares of one colour. */
static int insufficient_material(const RulesObject *r, const Board *b) {
    int knights = 0, bishops = 0, bishop_colours = 0;
    for (int s = 0; s < r->nsq; s++) {
        int t = TYPE(b->sq[s]);
        if (!t || t == KING) continue;
        if (t == KNIGHT)
            knights++;
        else if (t == BISHOP) {
            bishops++;
            bishop_colours |= 1 << ((s % r->width + s / r->width) & 1);
        } else
            return 0;
    }
    if (knights + bishops <= 1) return 1;
    return knights == 0 && bishop_colours != 3;
}

/* Action of a move for the side to move (see header). */
static inline int encode_move(const RulesObject *r, int side, uint32_t m) {
    int from = M_FROM(m), to = M_TO(m), promo = M_PROMO(m), W = r->width;
    if (side == BLACK) {
        from = r->flip[from];
        to = r->flip[to];
    }
    int ff = from % W, fr = from / W, df = to % W - ff, dr = to / W - fr, plane;
    if (promo && promo != r->promo[0])
        plane = 8 * r->max_dist + 8 + 3 * (df + 1) + (promo == KNIGHT ? 0 : promo == BISHOP ? 1 : 2);
    else
        plane = r->delta_plane[(df + 7) * 15 + dr + 7];
    return (ff * r->height + fr) * r->nplanes + plane;
}

/* ------------------------------------------------------------------------ */
/* Game: a board with its history, legal-move cache and outcome cache        */

typedef struct {
    Board *hist; /* hist[0] is the root, hist[ply] the current board */
    int ply, cap;
    int nlegal; /* -1: not generated yet */
    uint32_t legal[MAX_MOVES];
    int16_t legal_action[MAX_MOVES];
    int8_t reason, winner; /* outcome cache; reason -1: not computed */
} Game;

static int game_reserve(Game *g, int need) {
    if (need <= g->cap) return 0;
    if (need > INT32_MAX / 2 / (int)sizeof(Board)) {
        PyErr_NoMemory();
        return -1;
    }
    int cap = g->cap ? g->cap : 64;
    while (cap < need) cap *= 2;
    Board *h = PyMem_Realloc(g->hist, (size_t)cap * sizeof(Board));
    if (!h) {
        PyErr_NoMemory();
        return -1;
    }
    g->hist = h;
    g->cap = cap;
    return 0;
}

static inline void game_invalidate(Game *g) {
    g->nlegal = -1;
    g->reason = -1;
}

static inline void game_ensure_legal(const RulesObject *r, Game *g) {
    if (g->nlegal >= 0) return;
    const Board *b = &g->hist[g->ply];
    g->nlegal = gen_legal(r, b, g->legal);
    for (int i = 0; i < g->nlegal; i++) g->legal_action[i] = (int16_t)encode_move(r, b->side, g->legal[i]);
}

static int game_push(const RulesObject *r, Game *g, uint32_t m) {
    if (game_reserve(g, g->ply + 2) < 0) return -1;
    Board *nb = &g->hist[g->ply + 1];
    *nb = g->hist[g->ply];
    make_move(r, nb, m);
    g->ply++;
    /* Repetitions: the nearest earlier occurrence already counts the ones before it. */
    nb->reps = 1;
    for (int k = g->ply - 2; k >= 0 && k >= g->ply - nb->halfmove; k -= 2)
        if (g->hist[k].hash == nb->hash) {
            nb->reps = (uint8_t)(g->hist[k].reps + (g->hist[k].reps < UINT8_MAX));
            break;
        }
    game_invalidate(g);
    return 0;
}

static void game_outcome(const RulesObject *r, Game *g) {
    if (g->reason >= 0) return;
    const Board *b = &g->hist[g->ply];
    int us = b->side;
    g->winner = -1;
    if (b->king[WHITE] < 0 || b->king[BLACK] < 0) {
        g->reason = KING_CAPTURE;
        g->winner = b->king[WHITE] < 0 ? BLACK : WHITE;
        return;
    }
    game_ensure_legal(r, g);
    if (g->nlegal == 0) {
        if (!r->king_capture && in_check(r, b)) {
            g->reason = CHECKMATE;
            g->winner = (int8_t)(us ^ 1);
        } else {
            g->reason = STALEMATE;
            if (r->stalemate_value) g->winner = (int8_t)(r->stalemate_value > 0 ? us : us ^ 1);
        }
    } else if (r->insufficient && insufficient_material(r, b)) {
        g->reason = INSUFFICIENT_MATERIAL;
    } else if (r->repetition && b->reps >= r->repetition) {
        g->reason = REPETITION;
    } else if (r->no_progress && b->halfmove >= r->no_progress) {
        g->reason = NO_PROGRESS;
    } else {
        g->reason = ONGOING;
    }
}

static uint64_t perft(const RulesObject *r, const Board *b, int depth) {
    if (depth <= 0) return 1;
    uint32_t moves[MAX_MOVES];
    int n = gen_legal(r, b, moves);
    if (depth == 1) return (uint64_t)n;
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        Board c = *b;
        make_move(r, &c, moves[i]);
        total += perft(r, &c, depth - 1);
    }
    return total;
}

/* Observation planes, shape (height, width, channels), from the side to move:
 *   for t in 0..history-1 (t = 0 is now, t = 1 the position before, ...):
 *       own piece planes (variant's types, order P N B R Q K), opponent's,
 *       "occurred twice", "occurred three times"
 *   colour (1 when Black moves), no-progress clock / limit,
 *   [castling: own option 0, own option 1, opponent 0, opponent 1]
 *   [en-passant target], [last move: from, to]
 * Rows are ranks from the mover's side (row 0 = the mover's back rank). */
typedef struct {
    int history, last_move, castling, ep, per_step, channels;
} ObsLayout;

static ObsLayout obs_layout(const RulesObject *r, int history, int last_move) {
    ObsLayout L;
    L.history = history;
    L.last_move = last_move;
    L.castling = r->ncastle[WHITE] + r->ncastle[BLACK] > 0;
    L.ep = r->en_passant && r->double_step;
    L.per_step = 2 * r->npiece_types + 2;
    L.channels = history * L.per_step + 2 + 4 * L.castling + L.ep + 2 * L.last_move;
    return L;
}

/* history must be 1..MAX_HISTORY; sets ValueError and returns -1 otherwise. */
static int check_history(int history) {
    if (history >= 1 && history <= MAX_HISTORY) return 0;
    PyErr_Format(PyExc_ValueError, "history must be >= 1 and at most %d, got %d", MAX_HISTORY, history);
    return -1;
}

static void fill_plane(float *out, int nsq, int C, int c, float v) {
    for (int s = 0; s < nsq; s++) out[s * C + c] = v;
}

/* `us` is the player whose view is written: usually the side to move. */
static void write_observation(const RulesObject *r, const Game *g, const ObsLayout *L, int us, float *out) {
    int C = L->channels, nsq = r->nsq, np = r->npiece_types;
    const Board *now = &g->hist[g->ply];
    memset(out, 0, (size_t)nsq * C * sizeof(float));
    for (int t = 0; t < L->history && t <= g->ply; t++) {
        const Board *hb = &g->hist[g->ply - t];
        int base = t * L->per_step;
        for (int s = 0; s < nsq; s++) {
            int p = hb->sq[s];
            if (!p) continue;
            int plane = r->piece_plane[TYPE(p)];
            if (plane < 0) continue; /* not one of the variant's types (set_board refuses them) */
            int ps = us == BLACK ? r->flip[s] : s;
            out[ps * C + base + (COLOR(p) == us ? 0 : np) + plane] = 1.0f;
        }
        if (hb->reps >= 2) fill_plane(out, nsq, C, base + 2 * np, 1.0f);
        if (hb->reps >= 3) fill_plane(out, nsq, C, base + 2 * np + 1, 1.0f);
    }
    int c = L->history * L->per_step;
    if (us == BLACK) fill_plane(out, nsq, C, c, 1.0f);
    c++;
    if (r->no_progress) { /* without a no-progress rule the clock means nothing: plane stays 0 */
        float clock = (float)now->halfmove / (float)r->no_progress;
        fill_plane(out, nsq, C, c, clock > 1.0f ? 1.0f : clock);
    }
    c++;
    if (L->castling) {
        for (int side = 0; side < 2; side++) {
            int colour = side == 0 ? us : us ^ 1;
            for (int i = 0; i < 2; i++, c++)
                if (i < r->ncastle[colour] && (now->castling & r->castle[colour][i].right))
                    fill_plane(out, nsq, C, c, 1.0f);
        }
    }
    if (L->ep) {
        if (now->ep >= 0) out[(us == BLACK ? r->flip[now->ep] : now->ep) * C + c] = 1.0f;
        c++;
    }
    if (L->last_move && now->last_move) {
        int f = M_FROM(now->last_move), to = M_TO(now->last_move);
        if (us == BLACK) {
            f = r->flip[f];
            to = r->flip[to];
        }
        out[f * C + c] = 1.0f;
        out[to * C + c + 1] = 1.0f;
    }
}

/* ------------------------------------------------------------------------ */
/* Position: the Python face of a Game                                      */

typedef struct {
    PyObject_HEAD
    RulesObject *rules;
    PyObject *variant; /* opaque to C: the Python variant spec */
    Game g;
} PositionObject;

static PyTypeObject PositionType;
static PyObject *IllegalMoveError; /* subclass of ValueError */

static int Position_init(PositionObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"rules", "variant", NULL};
    PyObject *rules, *variant = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!|O", kwlist, &RulesType, &rules, &variant))
        return -1;
    Py_INCREF(rules);
    Py_XSETREF(self->rules, (RulesObject *)rules);
    Py_INCREF(variant);
    Py_XSETREF(self->variant, variant);
    if (game_reserve(&self->g, 64) < 0) return -1;
    self->g.ply = 0;
    memset(&self->g.hist[0], 0, sizeof(Board));
    self->g.hist[0].ep = -1;
    self->g.hist[0].king[0] = self->g.hist[0].king[1] = -1;
    self->g.hist[0].reps = 1;
    self->g.hist[0].fullmove = 1;
    game_invalidate(&self->g);
    return 0;
}

static void Position_dealloc(PositionObject *self) {
    PyMem_Free(self->g.hist);
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
    const RulesObject *r = self->rules;
    if (pieces.len != r->nsq) {
        PyBuffer_Release(&pieces);
        return PyErr_Format(PyExc_ValueError, "expected %d squares, got %zd", r->nsq, pieces.len);
    }
    if (halfmove < 0 || halfmove > MAX_COUNTER || fullmove < 1 || fullmove > MAX_COUNTER) {
        PyBuffer_Release(&pieces);
        return PyErr_Format(PyExc_ValueError, "halfmove clock %lld or fullmove number %lld outside 0..%d and 1..%d",
                            halfmove, fullmove, MAX_COUNTER, MAX_COUNTER);
    }
    Board nb, *b = &nb;
    memset(b, 0, sizeof *b);
    b->king[0] = b->king[1] = -1;
    for (int s = 0; s < r->nsq; s++) {
        int p = ((const uint8_t *)pieces.buf)[s];
        if (p && (p > 15 || TYPE(p) < PAWN || TYPE(p) > KING || r->piece_plane[TYPE(p)] < 0)) {
            PyBuffer_Release(&pieces);
            return PyErr_Format(PyExc_ValueError, "bad piece code %d on square %d (not a piece of this variant)", p, s);
        }
        b->sq[s] = (int8_t)p;
        if (TYPE(p) == KING) b->king[COLOR(p)] = (int8_t)s;
        if (p) b->hash ^= r->z_piece[p][s];
    }
    PyBuffer_Release(&pieces);
    uint8_t options = 0;
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < r->ncastle[c]; k++) options |= r->castle[c][k].right;
    b->side = (uint8_t)(turn ? BLACK : WHITE);
    b->castling = (uint8_t)(castling & options);
    b->ep = -1;
    b->halfmove = (int32_t)halfmove;
    b->fullmove = (int32_t)fullmove;
    b->reps = 1;
    b->last_move = 0;
    b->hash ^= r->z_castle[b->castling];
    if (b->side == BLACK) b->hash ^= r->z_side;
    if (r->en_passant && ep_capture_legal(r, b, ep)) {
        b->ep = (int8_t)ep;
        b->hash ^= r->z_ep[ep];
    }
    self->g.hist[0] = nb;
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
        return NULL;
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
    game_ensure_legal(self->rules, &self->g);
    PyObject *list = PyList_New(self->g.nlegal);
    if (!list) return NULL;
    for (int i = 0; i < self->g.nlegal; i++) PyList_SET_ITEM(list, i, PyLong_FromUnsignedLong(self->g.legal[i]));
    return list;
}

static PyObject *Position_legal_actions(PositionObject *self, PyObject *unused) {
    CHECK_READY(self);
    game_ensure_legal(self->rules, &self->g);
    PyObject *list = PyList_New(self->g.nlegal);
    if (!list) return NULL;
    for (int i = 0; i < self->g.nlegal; i++) PyList_SET_ITEM(list, i, PyLong_FromLong(self->g.legal_action[i]));
    return list;
}

static PyObject *Position_num_legal_moves(PositionObject *self, PyObject *unused) {
    CHECK_READY(self);
    game_ensure_legal(self->rules, &self->g);
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
    if (get_writable(arg, &view, 1, self->rules->naction, "action mask") < 0) return NULL;
    game_ensure_legal(self->rules, &self->g);
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
    ObsLayout L = obs_layout(self->rules, history, last_move);
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
    ObsLayout L = obs_layout(self->rules, history, last_move);
    Py_buffer view;
    if (get_writable(obj, &view, 4, (Py_ssize_t)self->rules->nsq * L.channels, "observation") < 0) return NULL;
    if (view.format && strcmp(view.format, "f") != 0) {
        PyBuffer_Release(&view);
        return PyErr_Format(PyExc_ValueError, "observation buffer must be float32, got format '%s'", view.format);
    }
    write_observation(self->rules, &self->g, &L, perspective < 0 ? cur(self)->side : perspective, view.buf);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

static PyObject *push_checked(PositionObject *self, uint32_t m) {
    if (game_push(self->rules, &self->g, m) < 0) return NULL;
    Py_RETURN_NONE;
}

/* push(code): play a legal move given by its code. */
static PyObject *Position_push_code(PositionObject *self, PyObject *arg) {
    CHECK_READY(self);
    unsigned long m = PyLong_AsUnsignedLong(arg);
    if (m == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    game_ensure_legal(self->rules, &self->g);
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
    if (a < 0 || a >= self->rules->naction)
        return PyErr_Format(PyExc_ValueError, "action %ld is outside [0, %d)", a, self->rules->naction);
    game_ensure_legal(self->rules, &self->g);
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
    game_ensure_legal(self->rules, &self->g);
    for (int i = 0; i < self->g.nlegal; i++) {
        if (self->g.legal_action[i] != a) continue;
        uint32_t m = self->g.legal[i];
        int W = self->rules->width, from = M_FROM(m), to = M_TO(m), promo = M_PROMO(m);
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
    const RulesObject *r = self->rules;
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
    game_outcome(self->rules, &self->g);
    return Py_BuildValue("ii", self->g.reason, self->g.winner);
}

/* material_balance() -> White's material minus Black's in pawns (kings do not count). */
static PyObject *Position_material_balance(PositionObject *self, PyObject *unused) {
    CHECK_READY(self);
    return PyLong_FromLong(material_balance(self->rules, cur(self)));
}

static PyObject *Position_is_check(PositionObject *self, PyObject *unused) {
    CHECK_READY(self);
    return PyBool_FromLong(in_check(self->rules, cur(self)));
}

static PyObject *Position_is_attacked_square(PositionObject *self, PyObject *args) {
    int sq, by;
    CHECK_READY(self);
    if (!PyArg_ParseTuple(args, "ii", &sq, &by)) return NULL;
    if (sq < 0 || sq >= self->rules->nsq) return PyErr_Format(PyExc_ValueError, "square %d is off the board", sq);
    return PyBool_FromLong(attacked(self->rules, cur(self), sq, by ? BLACK : WHITE));
}

static PyObject *Position_perft(PositionObject *self, PyObject *arg) {
    CHECK_READY(self);
    long depth = PyLong_AsLong(arg);
    if (depth == -1 && PyErr_Occurred()) return NULL;
    if (depth < 0) return PyErr_Format(PyExc_ValueError, "depth must be >= 0, got %ld", depth);
    Board b = *cur(self);
    uint64_t n;
    Py_BEGIN_ALLOW_THREADS
    n = perft(self->rules, &b, (int)depth);
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
        PyBytes_FromStringAndSize((const char *)b->sq, self->rules->nsq), PyLong_FromLong(b->side),
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
    return PyBytes_FromStringAndSize((const char *)cur(self)->sq, self->rules->nsq);
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

static PyTypeObject PositionType = {
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

/* ------------------------------------------------------------------------ */
/* Batches: many games stepped in one call (the native vector environment)  */

/* Borrow the C buffer of an argument with the expected item size and length. */
static int get_array(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t count, int writable,
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

static PositionObject *batch_item(PyObject *seq, Py_ssize_t i) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
    if (!PyObject_TypeCheck(item, &PositionType) || !((PositionObject *)item)->rules) {
        PyErr_Format(PyExc_TypeError, "item %zd of the batch is not an initialised Position", i);
        return NULL;
    }
    return (PositionObject *)item;
}

static inline uint64_t xorshift64star(uint64_t *state) {
    uint64_t x = *state ? *state : 0x9E3779B97F4A7C15ULL;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Has the game of g ended by the rules, or reached a limit? Sets *reason, *winner. */
static int duel_over(const RulesObject *r, Game *g, int ply_limit, int max_steps, int steps, int8_t *reason,
                     int8_t *winner, uint8_t *truncated) {
    game_outcome(r, g);
    *reason = g->reason;
    *winner = g->winner;
    if (g->reason) return 1;
    if (g->ply >= ply_limit || (max_steps > 0 && steps >= max_steps)) {
        *truncated = 1;
        return 1;
    }
    return 0;
}

/* step_random_duels(positions, actions, active, rng, steps, ply_limit, max_steps,
 *                   reasons, winners, truncated, illegal, material)
 * For every active game: play the learner's action, and unless the game is
 * over play a uniformly random legal reply drawn from that game's xorshift64*
 * state. Outputs per game: termination reason and winner (as outcome_code),
 * truncated (ply or step limit), illegal (the action was not legal: nothing was
 * played), and White's material balance afterwards.
 * Arrays: actions int64, active/truncated/illegal uint8, rng uint64, steps int32,
 * reasons/winners int8, material int32; all of length len(positions). */
static PyObject *core_step_random_duels(PyObject *module, PyObject *args) {
    PyObject *positions, *o_actions, *o_active, *o_rng, *o_steps, *o_reasons, *o_winners, *o_trunc, *o_illegal,
        *o_material;
    int ply_limit, max_steps;
    if (!PyArg_ParseTuple(args, "OOOOOiiOOOOO", &positions, &o_actions, &o_active, &o_rng, &o_steps, &ply_limit,
                          &max_steps, &o_reasons, &o_winners, &o_trunc, &o_illegal, &o_material))
        return NULL;
    PyObject *seq = PySequence_Fast(positions, "positions must be a sequence of Position");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    Py_buffer b[10];
    PyObject *objs[10] = {o_actions, o_active, o_rng, o_steps, o_reasons, o_winners, o_trunc, o_illegal, o_material};
    const Py_ssize_t sizes[9] = {8, 1, 8, 4, 1, 1, 1, 1, 4};
    const int writable[9] = {0, 0, 1, 1, 1, 1, 1, 1, 1};
    const char *names[9] = {"actions", "active", "rng", "steps", "reasons", "winners", "truncated", "illegal",
                            "material"};
    int got = 0;
    for (; got < 9; got++)
        if (get_array(objs[got], &b[got], sizes[got], n, writable[got], names[got]) < 0) break;
    if (got < 9) {
        for (int k = 0; k < got; k++) PyBuffer_Release(&b[k]);
        Py_DECREF(seq);
        return NULL;
    }
    const int64_t *actions = b[0].buf;
    const uint8_t *active = b[1].buf;
    uint64_t *rng = b[2].buf;
    int32_t *steps = b[3].buf;
    int8_t *reasons = b[4].buf, *winners = b[5].buf;
    uint8_t *truncated = b[6].buf, *illegal = b[7].buf;
    int32_t *material = b[8].buf;
    PyObject *result = Py_None;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!active[i]) continue;
        PositionObject *pos = batch_item(seq, i);
        if (!pos) {
            result = NULL;
            break;
        }
        const RulesObject *r = pos->rules;
        Game *g = &pos->g;
        truncated[i] = illegal[i] = 0;
        game_ensure_legal(r, g);
        int k = 0;
        while (k < g->nlegal && g->legal_action[k] != actions[i]) k++;
        if (k == g->nlegal) {
            illegal[i] = 1;
            continue;
        }
        if (game_push(r, g, g->legal[k]) < 0) {
            result = NULL;
            break;
        }
        steps[i]++;
        if (!duel_over(r, g, ply_limit, max_steps, steps[i], &reasons[i], &winners[i], &truncated[i])) {
            game_ensure_legal(r, g);
            /* pick = floor(u * nlegal / 2^53) for 53 random bits u, in exact integer
             * arithmetic so that minichess_envs.env.Opponent draws the same moves. */
            uint64_t u = xorshift64star(&rng[i]) >> 11;
            int pick = (int)((u * (uint64_t)g->nlegal) >> 53);
            if (game_push(r, g, g->legal[pick]) < 0) {
                result = NULL;
                break;
            }
            duel_over(r, g, ply_limit, max_steps, steps[i], &reasons[i], &winners[i], &truncated[i]);
        }
        material[i] = material_balance(r, &g->hist[g->ply]);
    }
    for (int k = 0; k < 9; k++) PyBuffer_Release(&b[k]);
    Py_DECREF(seq);
    if (!result) return NULL;
    Py_RETURN_NONE;
}

/* write_batch(positions, observations, masks, perspectives, history, last_move)
 * Observation and legal-action mask of every game into (n, H, W, C) float32 and
 * (n, A) int8 arrays; perspectives int8 (0 White, 1 Black, -1 side to move). */
static PyObject *core_write_batch(PyObject *module, PyObject *args) {
    PyObject *positions, *o_obs, *o_masks, *o_persp;
    int history, last_move;
    if (!PyArg_ParseTuple(args, "OOOOip", &positions, &o_obs, &o_masks, &o_persp, &history, &last_move)) return NULL;
    if (check_history(history) < 0) return NULL;
    PyObject *seq = PySequence_Fast(positions, "positions must be a sequence of Position");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n == 0) {
        Py_DECREF(seq);
        Py_RETURN_NONE;
    }
    PositionObject *first = batch_item(seq, 0);
    if (!first) {
        Py_DECREF(seq);
        return NULL;
    }
    const RulesObject *r0 = first->rules;
    ObsLayout L = obs_layout(r0, history, last_move);
    Py_ssize_t per_obs = (Py_ssize_t)r0->nsq * L.channels;
    Py_buffer obs, masks, persp;
    if (get_array(o_obs, &obs, 4, n * per_obs, 1, "observations") < 0) {
        Py_DECREF(seq);
        return NULL;
    }
    if (get_array(o_masks, &masks, 1, n * r0->naction, 1, "masks") < 0) {
        PyBuffer_Release(&obs);
        Py_DECREF(seq);
        return NULL;
    }
    if (get_array(o_persp, &persp, 1, n, 0, "perspectives") < 0) {
        PyBuffer_Release(&obs);
        PyBuffer_Release(&masks);
        Py_DECREF(seq);
        return NULL;
    }
    PyObject *result = Py_None;
    for (Py_ssize_t i = 0; i < n; i++) {
        PositionObject *pos = batch_item(seq, i);
        if (!pos || pos->rules != r0) {
            if (pos) PyErr_Format(PyExc_ValueError, "game %zd of the batch has another variant's rules", i);
            result = NULL;
            break;
        }
        int p = ((const int8_t *)persp.buf)[i];
        if (p < -1 || p > 1) {
            PyErr_Format(PyExc_ValueError, "perspective %d of game %zd is not 0 (White), 1 (Black) or -1", p, i);
            result = NULL;
            break;
        }
        write_observation(r0, &pos->g, &L, p < 0 ? pos->g.hist[pos->g.ply].side : p, (float *)obs.buf + i * per_obs);
        game_ensure_legal(r0, &pos->g);
        uint8_t *m = (uint8_t *)masks.buf + i * r0->naction;
        memset(m, 0, (size_t)r0->naction);
        for (int k = 0; k < pos->g.nlegal; k++) m[pos->g.legal_action[k]] = 1;
    }
    PyBuffer_Release(&obs);
    PyBuffer_Release(&masks);
    PyBuffer_Release(&persp);
    Py_DECREF(seq);
    if (!result) return NULL;
    Py_RETURN_NONE;
}

#include "_search.c" /* the tree search, kept in its own file */

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
