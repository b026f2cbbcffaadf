/*
 * batch.c -- many games stepped in one call: the native vector environment
 * (minichess_envs/vector.py) plays the learner's actions and random replies,
 * and writes observations and masks, without a Python call per game.
 */
#include "core.h"

#include <string.h>

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
static int duel_over(const Rules *r, Game *g, int ply_limit, int max_steps, int steps, int8_t *reason,
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
PyObject *core_step_random_duels(PyObject *module, PyObject *args) {
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
        const Rules *r = &pos->rules->r;
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
            PyErr_NoMemory();
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
                PyErr_NoMemory();
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
PyObject *core_write_batch(PyObject *module, PyObject *args) {
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
    const Rules *r0 = &first->rules->r;
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
        if (!pos || &pos->rules->r != r0) {
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

