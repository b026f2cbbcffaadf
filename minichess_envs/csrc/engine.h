/*
 * engine.h -- the rules engine of minichess-envs, as a plain C API (no Python).
 *
 * One engine for every board from 1x1 to 8x8.  A `Rules` is compiled once from
 * a variant spec (rules_init; Python's minichess_envs/variants.py builds the
 * spec) and is read-only afterwards.  A `Board` is one position, plain data
 * copied by value; a `Game` is a board with its history, legal-move cache and
 * outcome cache.  Everything that runs per move lives here: move generation,
 * make move, check and outcome detection, Zobrist hashing, repetition
 * counting, the action encoding and the observation planes.  FEN, UCI and
 * validation with readable errors live in Python (minichess_envs/engine.py);
 * board_set checks only what the engine itself relies on.
 *
 * The Python bindings (module.c), batched env stepping (batch.c) and the tree
 * search (search.c) are built on this API; fuzz_engine.c drives it directly
 * under sanitizers.
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
 *
 * Errors: functions that can fail return -1 and, where they take one, write a
 * message to err (errlen bytes); the only other failure is running out of
 * memory (game_reserve, game_push, game_init).
 */
#ifndef MINICHESS_ENGINE_H
#define MINICHESS_ENGINE_H

#include <stddef.h>
#include <stdint.h>

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

/* ------------------------------------------------------------------------ */
/* Rules: board geometry, rule flags, encoding tables, Zobrist keys          */

typedef struct {
    int8_t king_from, king_to, rook_from, rook_to;
    uint8_t right; /* bit in Board.castling */
} Castle;

typedef struct {
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
} Rules;


/* What rules_init compiles: a variant's rules as plain values. */
typedef struct {
    int width, height;     /* 1..MAX_SIDE */
    const char *pieces;    /* piece letters in play, e.g. "KQRBNP" */
    const char *promotion; /* promotion pieces, first = plain promotion, e.g. "QRBN" */
    int double_step, en_passant, king_capture;
    int stalemate_value; /* for the stalemated side: 0 draw, -1 loss, +1 win */
    int repetition;      /* n-fold repetition draw, 0 = off */
    int no_progress;     /* plies without capture or pawn move for a draw, 0 = off */
    int insufficient;    /* draw when neither side can possibly mate */
    int ncastling;       /* 0..4 */
    int castling[4][5];  /* (colour, king_from, king_to, rook_from, rook_to), files on that colour's back rank */
} RulesSpec;

/* Compile a spec into r; -1 with a message in err if the spec is invalid. */
int rules_init(Rules *r, const RulesSpec *spec, char *err, size_t errlen);

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

/* Set b to a position from raw fields (pieces: nsq piece codes, ep: -1 or a
 * square).  Refuses piece codes of types the variant does not use, a second
 * king of a colour, and counters out of range; drops castling bits the variant lacks and an
 * en-passant square without a legal capture onto it.  -1 with a message in
 * err on a refusal, b untouched. */
int board_set(const Rules *r, Board *b, const uint8_t *pieces, int turn, int castling, int ep, long long halfmove,
              long long fullmove, char *err, size_t errlen);
/* Is square sq attacked by colour `by`? */
int attacked(const Rules *r, const Board *b, int sq, int by);
/* Play a pseudo-legal move (one gen_legal listed) on b in place. */
void make_move(const Rules *r, Board *b, uint32_t m);
/* Legal moves of the side to move into out (room for MAX_MOVES); returns their number. */
int gen_legal(const Rules *r, const Board *b, uint32_t *out);
/* Can the side to move capture en passant onto target with a legal move? */
int ep_capture_legal(const Rules *r, const Board *b, int target);
/* White's material minus Black's, in pawns (PIECE_VALUE, kings not counted). */
int material_balance(const Rules *r, const Board *b);
/* Neither side can possibly checkmate. */
int insufficient_material(const Rules *r, const Board *b);
/* Action index of move m for `side` to move (0..naction-1 for every move gen_legal lists). */
int encode_move(const Rules *r, int side, uint32_t m);
/* Leaf count of the legal-move tree to depth. */
uint64_t perft(const Rules *r, const Board *b, int depth);

static inline int in_check(const Rules *r, const Board *b) {
    int k = b->king[b->side];
    return k >= 0 && attacked(r, b, k, b->side ^ 1);
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

/* Reset g (zero-initialised, or initialised before) to an empty root board
 * (no pieces, no kings): 0, or -1 out of memory. */
int game_init(Game *g);
void game_free(Game *g);
/* Room for need boards in the history: 0, or -1 out of memory. */
int game_reserve(Game *g, int need);
/* Fill the legal-move cache (moves and their actions) of the current board. */
void game_generate_legal(const Rules *r, Game *g);
/* Play a legal move and count repetitions: 0, or -1 out of memory. */
int game_push(const Rules *r, Game *g, uint32_t m);
/* Fill the outcome cache (g->reason, g->winner) of the current board. */
void game_outcome(const Rules *r, Game *g);

/* After changing the history by hand (ply, boards): forget the caches. */
static inline void game_invalidate(Game *g) {
    g->nlegal = -1;
    g->reason = -1;
}

static inline void game_ensure_legal(const Rules *r, Game *g) {
    if (g->nlegal < 0) game_generate_legal(r, g);
}

/* ------------------------------------------------------------------------ */
/* Observations                                                             */

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

/* Layout for history (1..MAX_HISTORY) positions, with or without the last-move planes. */
ObsLayout obs_layout(const Rules *r, int history, int last_move);
/* Write the planes of the game seen by `us` into out (nsq * L->channels floats). */
void write_observation(const Rules *r, const Game *g, const ObsLayout *L, int us, float *out);

#endif /* MINICHESS_ENGINE_H */
