/*
 * engine.c -- the rules engine (see engine.h for the API and conventions).
 */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Directions, in PettingZoo/AlphaZero queen-plane order:
 * (df, dr) over df in -1..1, dr in -1..1, skipping (0, 0). */
static const int DIR_DF[8] = {-1, -1, -1, 0, 0, 1, 1, 1};
static const int DIR_DR[8] = {-1, 0, 1, -1, 1, -1, 0, 1};
/* Knight jumps, same order as PettingZoo: df in -2..2, dr in -2..2. */
static const int KN_DF[8] = {-2, -2, -1, -1, 1, 1, 2, 2};
static const int KN_DR[8] = {-1, 1, -2, 2, -2, 2, -1, 1};

static inline int is_diagonal(int d) { return DIR_DF[d] != 0 && DIR_DR[d] != 0; }

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

static int on_board(const Rules *r, int f, int rk) {
    return f >= 0 && f < r->width && rk >= 0 && rk < r->height;
}

static void rules_build_tables(Rules *r) {
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

int rules_init(Rules *r, const RulesSpec *spec, char *err, size_t errlen) {
    int W = spec->width, H = spec->height;
    memset(r, 0, sizeof *r);
    if (W < 1 || H < 1 || W > MAX_SIDE || H > MAX_SIDE) {
        snprintf(err, errlen, "board %dx%d is outside 1x1..8x8", W, H);
        return -1;
    }
    r->width = W;
    r->height = H;
    r->nsq = W * H;
    r->max_dist = (W > H ? W : H) - 1;
    if (r->max_dist < 1) r->max_dist = 1;
    r->nplanes = 8 * r->max_dist + 8 + 9;
    r->naction = r->nsq * r->nplanes;
    r->double_step = spec->double_step;
    r->en_passant = spec->en_passant;
    r->king_capture = spec->king_capture;
    r->stalemate_value = spec->stalemate_value;
    r->repetition = spec->repetition;
    r->no_progress = spec->no_progress;
    r->insufficient = spec->insufficient;
    for (int t = 0; t < 8; t++) r->piece_plane[t] = -1;
    r->npiece_types = 0;
    for (int t = PAWN; t <= KING; t++) /* canonical order P N B R Q K */
        if (strchr(spec->pieces, "?PNBRQK"[t]) || strchr(spec->pieces, "?pnbrqk"[t]))
            r->piece_plane[t] = r->npiece_types++;
    r->npromo = 0;
    for (const char *c = spec->promotion; *c; c++) {
        int t = piece_type_from_char(*c);
        if (!t || t == PAWN || t == KING || r->npromo >= MAX_PROMO || r->piece_plane[t] < 0) {
            snprintf(err, errlen, "bad promotion piece list '%s' (at most %d of N, B, R, Q, all in pieces '%s')",
                     spec->promotion, MAX_PROMO, spec->pieces);
            return -1;
        }
        if (r->npromo > 0 && t != KNIGHT && t != BISHOP && t != ROOK) {
            snprintf(err, errlen,
                     "promotion '%s': only the first piece may be other than N, B, R "
                     "(the others are encoded as underpromotions)",
                     spec->promotion);
            return -1;
        }
        r->promo[r->npromo++] = (int8_t)t;
    }
    rules_build_tables(r);
    memset(r->castle_keep, 0xFF, sizeof r->castle_keep);
    r->ncastle[0] = r->ncastle[1] = 0;
    if (spec->ncastling < 0 || spec->ncastling > 4) {
        snprintf(err, errlen, "at most two castling options per colour, got %d in all", spec->ncastling);
        return -1;
    }
    for (int i = 0; i < spec->ncastling; i++) {
        int c = spec->castling[i][0], kf = spec->castling[i][1], kt = spec->castling[i][2];
        int rf = spec->castling[i][3], rt = spec->castling[i][4];
        if (c < 0 || c > 1 || r->ncastle[c] >= 2 || kf < 0 || kt < 0 || rf < 0 || rt < 0 || kf >= W ||
            kt >= W || rf >= W || rt >= W || kf == rf || (kt - kf < 2 && kf - kt < 2) ||
            (r->ncastle[c] == 1 && r->castle[c][0].king_to % W == kt)) {
            snprintf(err, errlen,
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
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Boards: attacks, move generation, make move                              */

int attacked(const Rules *r, const Board *b, int sq, int by) {
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

static inline void add_pawn_moves(const Rules *r, int us, int from, int to, uint32_t *out, int *n) {
    int last = us == WHITE ? r->height - 1 : 0;
    if (to / r->width == last) {
        for (int k = 0; k < r->npromo; k++) out[(*n)++] = MOVE(from, to, r->promo[k], 0);
    } else {
        out[(*n)++] = MOVE(from, to, 0, 0);
    }
}

/* All pseudo-legal moves of the side to move (own king may be left attacked). */
static int gen_pseudo(const Rules *r, const Board *b, uint32_t *out) {
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

/* Can the side to move capture en passant onto `target` with a legal move?
 * Needs target empty and an enemy pawn just past it; with king capture every
 * pseudo-legal capture is legal, otherwise the capture must not leave the own
 * king attacked (e.g. by a rook along the rank both pawns leave). */
int ep_capture_legal(const Rules *r, const Board *b, int target) {
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
void make_move(const Rules *r, Board *b, uint32_t m) {
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
int gen_legal(const Rules *r, const Board *b, uint32_t *out) {
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
int material_balance(const Rules *r, const Board *b) {
    int balance = 0;
    for (int s = 0; s < r->nsq; s++) {
        int p = b->sq[s];
        if (p && TYPE(p) != KING) balance += COLOR(p) == WHITE ? PIECE_VALUE[TYPE(p)] : -PIECE_VALUE[TYPE(p)];
    }
    return balance;
}

/* Neither side can possibly checkmate: bare kings, a single minor piece, or
 * bishops only, all on squares of one colour. */
int insufficient_material(const Rules *r, const Board *b) {
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
int encode_move(const Rules *r, int side, uint32_t m) {
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

int board_set(const Rules *r, Board *out, const uint8_t *pieces, int turn, int castling, int ep, long long halfmove,
              long long fullmove, char *err, size_t errlen) {
    if (halfmove < 0 || halfmove > MAX_COUNTER || fullmove < 1 || fullmove > MAX_COUNTER) {
        snprintf(err, errlen, "halfmove clock %lld or fullmove number %lld outside 0..%d and 1..%d", halfmove,
                 fullmove, MAX_COUNTER, MAX_COUNTER);
        return -1;
    }
    Board nb, *b = &nb;
    memset(b, 0, sizeof *b);
    b->king[0] = b->king[1] = -1;
    for (int s = 0; s < r->nsq; s++) {
        int p = pieces[s];
        if (p && (p > 15 || TYPE(p) < PAWN || TYPE(p) > KING || r->piece_plane[TYPE(p)] < 0)) {
            snprintf(err, errlen, "bad piece code %d on square %d (not a piece of this variant)", p, s);
            return -1;
        }
        if (TYPE(p) == KING) {
            if (b->king[COLOR(p)] >= 0) {
                snprintf(err, errlen, "a second %s king on square %d", COLOR(p) == WHITE ? "white" : "black", s);
                return -1;
            }
            b->king[COLOR(p)] = (int8_t)s;
        }
        b->sq[s] = (int8_t)p;
        if (p) b->hash ^= r->z_piece[p][s];
    }
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
    *out = nb;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Games                                                                    */

int game_init(Game *g) {
    if (game_reserve(g, 64) < 0) return -1;
    g->ply = 0;
    memset(&g->hist[0], 0, sizeof(Board));
    g->hist[0].ep = -1;
    g->hist[0].king[0] = g->hist[0].king[1] = -1;
    g->hist[0].reps = 1;
    g->hist[0].fullmove = 1;
    game_invalidate(g);
    return 0;
}

void game_free(Game *g) {
    free(g->hist);
    g->hist = NULL;
    g->cap = 0;
}

int game_reserve(Game *g, int need) {
    if (need <= g->cap) return 0;
    if (need > INT32_MAX / 2 / (int)sizeof(Board)) return -1;
    int cap = g->cap ? g->cap : 64;
    while (cap < need) cap *= 2;
    Board *h = realloc(g->hist, (size_t)cap * sizeof(Board));
    if (!h) return -1;
    g->hist = h;
    g->cap = cap;
    return 0;
}

void game_generate_legal(const Rules *r, Game *g) {
    const Board *b = &g->hist[g->ply];
    g->nlegal = gen_legal(r, b, g->legal);
    for (int i = 0; i < g->nlegal; i++) g->legal_action[i] = (int16_t)encode_move(r, b->side, g->legal[i]);
}

int game_push(const Rules *r, Game *g, uint32_t m) {
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

void game_outcome(const Rules *r, Game *g) {
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

uint64_t perft(const Rules *r, const Board *b, int depth) {
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

/* ------------------------------------------------------------------------ */
/* Observations                                                             */

ObsLayout obs_layout(const Rules *r, int history, int last_move) {
    ObsLayout L;
    L.history = history;
    L.last_move = last_move;
    L.castling = r->ncastle[WHITE] + r->ncastle[BLACK] > 0;
    L.ep = r->en_passant && r->double_step;
    L.per_step = 2 * r->npiece_types + 2;
    L.channels = history * L.per_step + 2 + 4 * L.castling + L.ep + 2 * L.last_move;
    return L;
}

static void fill_plane(float *out, int nsq, int C, int c, float v) {
    for (int s = 0; s < nsq; s++) out[s * C + c] = v;
}

/* `us` is the player whose view is written: usually the side to move. */
void write_observation(const Rules *r, const Game *g, const ObsLayout *L, int us, float *out) {
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

