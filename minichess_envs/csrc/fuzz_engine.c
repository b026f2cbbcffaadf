/*
 * fuzz_engine.c -- a fuzz driver for the engine API (engine.h), without Python.
 *
 * Each input is a byte string that picks a variant (a shipped one, or rules
 * built from the bytes), a raw board (any piece codes, kings anywhere, any
 * castling bits, en-passant square and counters), then a sequence of moves.
 * For every position reached it checks what must hold for any board:
 *   - gen_legal lists at most MAX_MOVES moves, all with distinct actions in
 *     [0, naction), and perft(1) agrees;
 *   - after each listed move the incremental Zobrist hash equals the hash of
 *     the same board set up from scratch (board_set), and under checkmate
 *     rules the mover's king is not attacked;
 *   - the outcome and the observation (into a buffer of exactly the layout's
 *     size, heap-allocated so that AddressSanitizer sees its bounds) are
 *     written for a random history and perspective.
 * Any sanitizer report or failed check aborts.
 *
 * Standalone, seeded (what .ci/run-sanitize runs):
 *     cc -std=c11 -g -O1 -fsanitize=address,undefined fuzz_engine.c engine.c -o fuzz_engine
 *     ./fuzz_engine [seed] [inputs]
 * libFuzzer (coverage-guided, clang):
 *     clang -g -O1 -fsanitize=fuzzer,address,undefined -DMINICHESS_LIBFUZZER fuzz_engine.c engine.c -o fuzz
 */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "fuzz_engine: check failed at line %d: %s\n", __LINE__, #cond); \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* The shipped variants' rules (minichess_envs/variants.py), plus one with castling onto the rook's square. */
static const RulesSpec SPECS[] = {
    {3, 3, "KQR", "", 0, 0, 0, 0, 3, 0, 1, 0, {{0}}},                                     /* 3x3 */
    {5, 5, "KQRBNP", "QRBN", 0, 0, 0, 0, 3, 100, 1, 0, {{0}}},                            /* gardner */
    {5, 5, "KQRBNP", "QRBN", 0, 0, 1, 0, 3, 100, 0, 0, {{0}}},                            /* gardner king capture */
    {6, 6, "KQRNP", "QRN", 0, 0, 0, 0, 3, 100, 1, 0, {{0}}},                              /* los alamos */
    {4, 5, "KQRP", "QR", 1, 1, 0, 0, 3, 100, 1, 0, {{0}}},                                /* silverman */
    {5, 6, "KQRBNP", "QRBN", 0, 0, 0, -1, 3, 100, 1, 0, {{0}}},                           /* petty, stalemate lost */
    {8, 8, "KQRBNP", "QRBN", 1, 1, 0, 0, 3, 100, 1, 4,                                    /* chess */
     {{0, 4, 6, 7, 5}, {0, 4, 2, 0, 3}, {1, 4, 6, 7, 5}, {1, 4, 2, 0, 3}}},
    {6, 6, "KR", "", 0, 0, 0, 0, 0, 0, 1, 4,                                              /* castling onto the rook */
     {{0, 2, 4, 5, 3}, {0, 2, 0, 0, 1}, {1, 2, 4, 5, 3}, {1, 2, 0, 0, 1}}},
};
#define NSPECS ((int)(sizeof SPECS / sizeof SPECS[0]))

typedef struct {
    const uint8_t *data;
    size_t size, pos;
} Input;

static int next_byte(Input *in) { return in->pos < in->size ? in->data[in->pos++] : 0; }

/* Rules from bytes: any size, piece set and promotion list; rules_init may refuse them. */
static int random_rules(Input *in, Rules *r) {
    static char pieces[8], promotion[8];
    RulesSpec spec;
    memset(&spec, 0, sizeof spec);
    spec.width = 1 + next_byte(in) % 9; /* 9: refused */
    spec.height = 1 + next_byte(in) % 8;
    int np = 0, nq = 0, mask = next_byte(in);
    pieces[np++] = 'K';
    for (int t = 0; t < 5; t++)
        if (mask & (1 << t)) pieces[np++] = "QRBNP"[t];
    pieces[np] = 0;
    int pmask = next_byte(in);
    for (int t = 0; t < 6; t++)
        if (pmask & (1 << t)) promotion[nq++] = "QRBNKP"[t];
    promotion[nq] = 0;
    spec.pieces = pieces;
    spec.promotion = promotion;
    int flags = next_byte(in);
    spec.double_step = flags & 1;
    spec.en_passant = (flags >> 1) & 1;
    spec.king_capture = (flags >> 2) & 1;
    spec.stalemate_value = (flags >> 3) % 3 - 1;
    spec.repetition = next_byte(in) % 4;
    spec.no_progress = next_byte(in) % 3 * 50;
    spec.insufficient = (flags >> 5) & 1;
    spec.ncastling = next_byte(in) % 3;
    for (int i = 0; i < spec.ncastling; i++)
        for (int k = 0; k < 5; k++) spec.castling[i][k] = k == 0 ? i % 2 : next_byte(in) % 9;
    char err[256];
    return rules_init(r, &spec, err, sizeof err);
}

static void check_position(const Rules *r, const Board *b) {
    uint32_t moves[MAX_MOVES];
    int n = gen_legal(r, b, moves);
    CHECK(n >= 0 && n <= MAX_MOVES);
    CHECK((uint64_t)n == perft(r, b, 1));
    static uint8_t seen[MAX_SQ * (8 * (MAX_SIDE - 1) + 17)];
    memset(seen, 0, (size_t)r->naction);
    for (int i = 0; i < n; i++) {
        int a = encode_move(r, b->side, moves[i]);
        CHECK(a >= 0 && a < r->naction);
        CHECK(!seen[a]);
        seen[a] = 1;
        Board c = *b;
        make_move(r, &c, moves[i]);
        Board fresh;
        char err[160];
        CHECK(board_set(r, &fresh, (const uint8_t *)c.sq, c.side, c.castling, c.ep, c.halfmove, c.fullmove, err,
                        sizeof err) == 0);
        CHECK(fresh.hash == c.hash && fresh.ep == c.ep);
        if (!r->king_capture && c.king[b->side] >= 0) CHECK(!attacked(r, &c, c.king[b->side], c.side));
    }
}

static long positions_checked, boards_refused;

static void run_one(const uint8_t *data, size_t size) {
    Input in = {data, size, 0};
    static Rules rules; /* large: keep it off the stack */
    int choice = next_byte(&in) % (NSPECS + 1);
    char err[256];
    if (choice == NSPECS) {
        if (random_rules(&in, &rules) < 0) return;
    } else {
        CHECK(rules_init(&rules, &SPECS[choice], err, sizeof err) == 0);
    }
    const Rules *r = &rules;
    /* a raw board: mostly the variant's pieces, sometimes any code */
    uint8_t pieces[MAX_SQ] = {0};
    int codes[16], ncodes = 0;
    for (int t = PAWN; t < KING; t++) /* kings are placed below (a second one is refused) */
        if (r->piece_plane[t] >= 0) codes[ncodes++] = t, codes[ncodes++] = t | 8;
    int density = next_byte(&in) % 100;
    for (int s = 0; s < r->nsq; s++) {
        int x = next_byte(&in);
        if (x == 255)
            pieces[s] = (uint8_t)next_byte(&in);
        else if (ncodes && x % 100 < density)
            pieces[s] = (uint8_t)codes[x % ncodes];
    }
    if (next_byte(&in) % 4) { /* usually one king each, anywhere */
        pieces[next_byte(&in) % r->nsq] = KING;
        pieces[next_byte(&in) % r->nsq] = KING | 8;
    }
    int turn = next_byte(&in) & 1, castling = next_byte(&in) & 15, ep = next_byte(&in) % (r->nsq + 2) - 1;
    static const long long COUNTERS[] = {1, 0, 99, 100, 32767, 32768, 65636, 2147483646, 2147483647,
                                         2147483648LL, -1}; /* the last two (and 0 for fullmove) are refused */
    int hx = next_byte(&in), fx = next_byte(&in);
    long long half = COUNTERS[hx < 248 ? hx % 9 : hx % 11], full = COUNTERS[fx < 248 ? fx % 9 : fx % 11];
    Game g;
    memset(&g, 0, sizeof g);
    CHECK(game_init(&g) == 0);
    if (board_set(r, &g.hist[0], pieces, turn, castling, ep, half, full, err, sizeof err) < 0) {
        boards_refused++;
        game_free(&g);
        return;
    }
    game_invalidate(&g);
    int history = 1 + next_byte(&in) % 8, last_move = next_byte(&in) & 1;
    ObsLayout L = obs_layout(r, history, last_move);
    float *obs = malloc((size_t)r->nsq * (size_t)L.channels * sizeof(float));
    CHECK(obs);
    for (int ply = 0; ply < 40 && in.pos < in.size; ply++) {
        const Board *b = &g.hist[g.ply];
        check_position(r, b);
        positions_checked++;
        game_outcome(r, &g);
        write_observation(r, &g, &L, next_byte(&in) & 1, obs);
        game_ensure_legal(r, &g);
        if (g.nlegal == 0) break;
        int32_t full_before = b->fullmove;
        CHECK(game_push(r, &g, g.legal[next_byte(&in) % g.nlegal]) == 0);
        CHECK(g.hist[g.ply].fullmove >= full_before && g.hist[g.ply].halfmove >= 0 && g.hist[g.ply].reps >= 1);
        if (next_byte(&in) % 8 == 0) { /* take back a move now and then */
            g.ply--;
            game_invalidate(&g);
        }
    }
    free(obs);
    game_free(&g);
}

#ifdef MINICHESS_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    run_one(data, size);
    return 0;
}
#else
static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

int main(int argc, char **argv) {
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 0;
    long runs = argc > 2 ? strtol(argv[2], NULL, 10) : 20000;
    uint64_t state = seed;
    uint8_t buf[512];
    for (long i = 0; i < runs; i++) {
        size_t size = 16 + splitmix(&state) % (sizeof buf - 16);
        for (size_t k = 0; k < size; k++) buf[k] = (uint8_t)splitmix(&state);
        run_one(buf, size);
    }
    printf("fuzz_engine: seed %llu, %ld inputs, %ld positions checked, %ld raw boards refused, no failures\n",
           (unsigned long long)seed, runs, positions_checked, boards_refused);
    return 0;
}
#endif
