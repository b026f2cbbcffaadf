/*
 * search.c -- batched Monte Carlo tree search (AlphaZero's PUCT, or Gumbel at the root), the one tree
 * every game is searched with.
 *
 * The `Search` type of the _core module: many trees searched together, so that
 * one network call evaluates a leaf of every tree.  A tree's game is either
 *   - a chess variant (`rules` given): moves are played with the engine API
 *     (engine.h) on a private copy of each root's game, all in C; or
 *   - any other game (`rules=None`, `num_actions` and `observation_size` given):
 *     each node keeps a Python game object, and a new leaf is made by calling
 *     `leaf(parent_game, action)` (action -1: the root itself), which returns
 *     (game, moves_again, terminal_value or None, legal_actions, observation, key);
 *     moves_again: the player who moved into it is to move again (a multi-jump).
 * Everything else (selection, virtual loss, backup, Gumbel, the root tables)
 * is the same code for both.  Python drives it (agents/alphazero/search.py):
 *
 *     search = Search(rules, num_trees, c_puct=1.25, discount=0.99, virtual_loss=1.0, fpu=0.0,
 *                     ply_limit=2**30, history=1, last_move=False,
 *                     root="puct", considered=16, c_visit=50.0, c_scale=1.0,
 *                     num_actions=0, observation_size=0, leaf=None)
 *     search.set_root(i, position_or_game)          for every tree i (a chess position's history is copied;
 *                                                   a game object is kept: pass a copy)
 *     search.set_gumbel(noise)                      root="gumbel": float32 (num_trees, A) Gumbel noise
 *     while search.min_visits() < simulations:
 *         n = search.select(k, simulations, obs, masks, keys)
 *             # up to k simulations in every rooted tree with fewer than `simulations`
 *             # visits; the n leaves that need the network are written to obs[:n]
 *             # (float32 (N, H, W, C)), masks[:n] (int8 (N, A)), keys[:n] (uint64,
 *             # a hash of the observation for the caller's cache)
 *         priors, values = network(obs[:n], masks[:n])   # values for the side to move
 *         search.backup(priors, values)             # float32 (n, A) and (n,); exactly once per select
 *         search.mix_root_noise(noise, epsilon)     # optional, once the roots are expanded:
 *                                                   # P <- (1 - eps) P + eps noise[i, action]
 *     search.root_stats(visits, q)                  # float32 (num_trees, A) each
 *     search.root_priors(priors)                    # float32 (num_trees, A): the roots' P, noise mixed in
 *     search.root_value_squares(squares)            # float32 (num_trees, A): mean squared backed-up value
 *     search.root_policy(policy, actions)           # root="gumbel": improved policy, move to play
 *
 * visits(i), min_visits(), clear(i) (tree i leaves the search) and the
 * `pending` count (leaves waiting for backup) complete it; set_root and clear
 * are refused between select and backup.
 *
 * Selection follows PUCT, Q + c * P * sqrt(N_parent) / (1 + N), with unvisited
 * children valued at fpu and virtual loss so that several leaves of one tree
 * can wait for the same network call; a simulation that reaches a leaf already
 * waiting is undone and ends that tree's share of the round.  Priors are
 * renormalised over the legal moves (uniform if they sum to 0).  Leaves where
 * the game is over (mate, stalemate, draw rules, ply limit) get their exact
 * value and are backed up at once.  Values are backed up negamax style with a
 * per-ply discount (value of a position = -discount * value of the position
 * after the chosen move, +discount where the same player moves again), so a
 * mate in 1 is worth more than a mate in 3 and a loss later is better than a
 * loss now.
 *
 * root="gumbel" (Danihelka, Guez, Schrittwieser, Silver, "Policy improvement by
 * planning with Gumbel", ICLR 2022): at the root, sequential halving over the
 * simulation budget among the top `considered` moves by g + log P (g: Gumbel
 * noise from the caller, zero for a deterministic search), ranked by
 * g + log P + sigma(completed Q); below the root, the deterministic choice
 * argmax pi'(a) - N(a) / (1 + sum N) with pi' = softmax(log P + sigma(completed Q)).
 * Completed Q: a visited move's mean value, an unvisited one's the mixed value
 * of the node's own network value and its visited moves' Q.  sigma(q) =
 * (c_visit + max N) * c_scale * (q + 1) / 2: values lie in [-1, 1] here, so
 * they are mapped to [0, 1] by that fixed range (not by the min and max of the
 * node's Q, which would blow a 0.01 difference up to the full scale).  Root
 * decisions leave out the virtual visits and losses of waiting simulations
 * (`inflight`), except that the visit counts of the halving schedule include
 * them, so the k leaves of one round take consecutive places in it; a root
 * choice among moves one of which still waits for its value ends the tree's
 * round instead, so the root decides as with one leaf a round.
 */
#include "core.h"

#include <float.h>
#include <math.h>
#include <string.h>

typedef struct {
    int32_t parent;      /* -1 for the root */
    int32_t first_child; /* -1 until expanded; children are contiguous */
    int16_t num_children;
    int16_t action;      /* action of the move into this node, for the parent's side */
    union {
        uint32_t move;        /* chess: the move code into this node */
        uint32_t moves_again; /* other games: 1 if the player who moved into this node moves here too */
    };
    float prior;         /* P(parent -> this) */
    int32_t visits;      /* N, virtual visits of pending simulations included */
    float value_sum;     /* W, from the view of the side that moved into this node */
    float value_squares; /* sum of the squared values backed up through this edge (no virtual losses) */
    int8_t terminal;     /* game over here: value is exact */
    int8_t pending;      /* expanded at selection, waiting for network priors */
    int16_t inflight;    /* virtual visits (and losses) in N and W, of simulations waiting for backup */
    float value;         /* this position's own value for the side to move here: exact if terminal,
                          * else the network's once it has answered (Gumbel's mixed value needs it) */
} Node;

typedef struct {
    Node *nodes;
    int32_t num_nodes, cap_nodes;
    Game game;    /* chess: root history; pushed along a path during selection */
    PyObject **games; /* other games: each node's game object (NULL until its leaf is made), owned */
    int root_ply; /* game.ply at the root */
    int has_root;
    float *gumbel;     /* Gumbel root: the root's noise per action (zeros unless set_gumbel) */
    int32_t *schedule; /* Gumbel root: sequential halving's visit count for each simulation index */
    int schedule_m, schedule_n, schedule_cap; /* the considered count and budget `schedule` is for */
} Tree;

typedef struct {
    int32_t tree, node;
} Leaf;

typedef struct {
    PyObject_HEAD
    RulesObject *rules; /* NULL: the games are Python objects, expanded through `leaf` */
    PyObject *leaf;     /* rules == NULL: leaf(parent_game, action) -> (game, value, actions, observation, key) */
    int naction;        /* actions of the game, the width of masks, priors and root tables */
    Py_ssize_t obs_size; /* floats in one observation */
    int num_trees;
    Tree *trees;
    float c_puct, discount, virtual_loss, fpu;
    int gumbel;            /* root="gumbel": sequential halving at the root, the improved policy below */
    int considered;        /* Gumbel: most root moves sampled (m) */
    float c_visit, c_scale; /* Gumbel: sigma(q) = (c_visit + max N) * c_scale * (q + 1) / 2 */
    float *scratch;        /* one float per action: a node's children during Gumbel selection */
    float *noise;          /* Gumbel: (num_trees, A) root noise, trees[i].gumbel point into it */
    int ply_limit;
    ObsLayout layout;
    Leaf *leaves; /* leaves of the last select, waiting for backup */
    int num_leaves, cap_leaves;
} SearchObject;


static int tree_add_nodes(Tree *t, int n) {
    if (t->num_nodes + n > t->cap_nodes) {
        int cap = t->cap_nodes ? t->cap_nodes : 1024;
        while (cap < t->num_nodes + n) cap *= 2;
        Node *nodes = PyMem_Realloc(t->nodes, (size_t)cap * sizeof(Node));
        if (!nodes) {
            PyErr_NoMemory();
            return -1;
        }
        t->nodes = nodes;
        if (t->games) {
            PyObject **games = PyMem_Realloc(t->games, (size_t)cap * sizeof(PyObject *));
            if (!games) {
                PyErr_NoMemory();
                return -1;
            }
            memset(games + t->cap_nodes, 0, (size_t)(cap - t->cap_nodes) * sizeof(PyObject *));
            t->games = games;
        }
        t->cap_nodes = cap;
    }
    int first = t->num_nodes;
    t->num_nodes += n;
    return first;
}

/* Value of a finished game for the side to move (it can only lose or draw,
 * except under a stalemate-wins rule). */
static float terminal_value(const Game *g) {
    if (g->winner < 0) return 0.0f;
    return g->winner == g->hist[g->ply].side ? 1.0f : -1.0f;
}

/* A 64-bit key of everything the observation shows, for the network's cache. */
static uint64_t observation_key(const Rules *r, const Game *g, const ObsLayout *L) {
    const Board *b = &g->hist[g->ply];
    uint64_t clock = r->no_progress ? (uint64_t)(b->halfmove < r->no_progress ? b->halfmove : r->no_progress) : 0;
    uint64_t key = 0x9E3779B97F4A7C15ULL ^ clock * 0xD6E8FEB86659FD93ULL;
    if (L->last_move) key ^= (uint64_t)b->last_move * 0xA0761D6478BD642FULL;
    for (int t = 0; t < L->history && t <= g->ply; t++) {
        const Board *h = &g->hist[g->ply - t];
        key = (key ^ h->hash ^ ((uint64_t)h->reps << 56)) * 0xE7037ED1A0B428DBULL;
        key ^= key >> 29;
    }
    return key;
}

/* Back up `value` (for the side to move at `node`) to the root, negamax with discount,
 * turning the path's virtual visits into real ones (their virtual losses are taken back). */
static void backup_path(SearchObject *s, Tree *t, int32_t node, float value) {
    while (node >= 0) {
        Node *nd = &t->nodes[node];
        if (nd->parent < 0) break; /* the root has no edge to credit */
        value = (!s->rules && nd->moves_again ? s->discount : -s->discount) * value;
        nd->value_sum += value + s->virtual_loss;
        nd->value_squares += value * value;
        nd->inflight -= 1;
        node = nd->parent;
    }
}

/* Give `node` n children with uniform priors; the caller sets each child's action and move. */
static int add_children(Tree *t, int32_t node, int n) {
    int first = tree_add_nodes(t, n);
    if (first < 0) return -1;
    Node *nd = &t->nodes[node];
    nd->first_child = first;
    nd->num_children = (int16_t)n;
    float uniform = n ? 1.0f / n : 0.0f;
    for (int k = 0; k < n; k++) {
        Node *c = &t->nodes[first + k];
        c->parent = node;
        c->first_child = -1;
        c->num_children = 0;
        c->action = -1;
        c->move = 0;
        c->prior = uniform;
        c->visits = 0;
        c->value_sum = 0.0f;
        c->value_squares = 0.0f;
        c->terminal = 0;
        c->pending = 0;
        c->inflight = 0;
        c->value = 0.0f;
    }
    return first;
}

/* Chess: expand the current position of t->game under `node`, one child per legal move. */
static int expand(SearchObject *s, Tree *t, int32_t node) {
    const Rules *r = &s->rules->r;
    Game *g = &t->game;
    game_ensure_legal(r, g);
    int first = add_children(t, node, g->nlegal);
    if (first < 0) return -1;
    for (int k = 0; k < g->nlegal; k++) {
        t->nodes[first + k].action = g->legal_action[k];
        t->nodes[first + k].move = g->legal[k];
    }
    return 0;
}

/* Other games: make the game at `node` with s->leaf (from its parent's game and the move into it,
 * or the root's own game), and either mark the node terminal with its exact value (returns 0) or
 * give it one child per legal action and write its observation, mask and key (returns 1); -1 on
 * error, with a Python exception that names what the game returned. */
static int make_leaf(SearchObject *s, Tree *t, int32_t node, float *obs, uint8_t *mask, uint64_t *key) {
    Node *nd = &t->nodes[node];
    PyObject *parent = nd->parent < 0 ? t->games[node] : t->games[nd->parent];
    PyObject *out = PyObject_CallFunction(s->leaf, "Oi", parent, nd->parent < 0 ? -1 : (int)nd->action);
    if (!out) return -1;
    int result = -1;
    PyObject *actions = NULL;
    Py_buffer view = {0};
    if (!PyTuple_Check(out) || PyTuple_GET_SIZE(out) != 6) {
        PyErr_SetString(PyExc_TypeError, "leaf must return (game, moves_again, value, actions, observation, key)");
        goto done;
    }
    PyObject *game = PyTuple_GET_ITEM(out, 0), *value = PyTuple_GET_ITEM(out, 2);
    int again = PyObject_IsTrue(PyTuple_GET_ITEM(out, 1));
    if (again < 0) goto done;
    Py_INCREF(game);
    Py_XSETREF(t->games[node], game);
    nd->moves_again = (uint32_t)again;
    if (value != Py_None) {
        double v = PyFloat_AsDouble(value);
        if (v == -1.0 && PyErr_Occurred()) goto done;
        if (!(v >= -1.0 && v <= 1.0)) {
            PyErr_Format(PyExc_ValueError, "a finished game's value must be in [-1, 1], got %R", value);
            goto done;
        }
        nd->terminal = 1;
        nd->value = (float)v;
        result = 0;
        goto done;
    }
    actions = PySequence_Fast(PyTuple_GET_ITEM(out, 3), "legal actions must be a sequence of integers");
    if (!actions) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(actions);
    if (n < 1 || n > s->naction) {
        PyErr_Format(PyExc_ValueError, "a game going on must have 1 to %d legal actions, got %zd", s->naction, n);
        goto done;
    }
    memset(mask, 0, (size_t)s->naction);
    int first = add_children(t, node, (int)n);
    if (first < 0) goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        long a = PyLong_AsLong(PySequence_Fast_GET_ITEM(actions, k));
        if (a == -1 && PyErr_Occurred()) goto done;
        if (a < 0 || a >= s->naction || mask[a]) {
            PyErr_Format(PyExc_ValueError, "legal action %ld is out of [0, %d) or repeated", a, s->naction);
            goto done;
        }
        mask[a] = 1;
        t->nodes[first + k].action = (int16_t)a;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(out, 4), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
    if (view.itemsize != 4 || !view.format || strcmp(view.format, "f") != 0 || view.len != s->obs_size * 4) {
        PyErr_Format(PyExc_ValueError, "an observation must be %zd float32 values", s->obs_size);
        goto done;
    }
    memcpy(obs, view.buf, (size_t)view.len);
    *key = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(out, 5));
    if (*key == (unsigned long long)-1 && PyErr_Occurred()) goto done;
    result = 1;
done:
    if (view.obj) PyBuffer_Release(&view);
    Py_XDECREF(actions);
    Py_DECREF(out);
    if (result < 0) t->nodes[node].num_children = 0, t->nodes[node].first_child = -1;
    return result;
}

/* PUCT's choice at nd: the first child with the highest Q + c * P * sqrt(N_parent) / (1 + N). */
static int32_t puct_child(const SearchObject *s, const Tree *t, const Node *nd) {
    float sqrt_n = sqrtf((float)(nd->visits > 1 ? nd->visits : 1));
    const Node *ch = &t->nodes[nd->first_child];
    float best = -1e30f;
    int32_t best_k = nd->first_child;
    for (int k = 0; k < nd->num_children; k++) {
        const Node *c = &ch[k];
        float q = c->visits ? c->value_sum / (float)c->visits : s->fpu;
        float score = q + s->c_puct * c->prior * sqrt_n / (1.0f + (float)c->visits);
        if (score > best) {
            best = score;
            best_k = nd->first_child + k;
        }
    }
    return best_k;
}

/* ---- Gumbel root search (Danihelka et al., "Policy improvement by planning with Gumbel", ICLR 2022) ---- */

static float log_prior(float p) { return logf(p > FLT_MIN ? p : FLT_MIN); }

/* sigma(completed Q) of nd's children, into out[0 .. num_children).  A visited
 * child's Q is its mean value; an unvisited one gets the mixed value
 * (raw value of nd and the prior-weighted Q of the visited children, weighted
 * 1 : sum N).  Q in [-1, 1] maps to [0, 1] and is scaled by (c_visit + max N) * c_scale.
 * clean: leave out the virtual visits and losses of simulations waiting for
 * backup (root decisions); otherwise they count, as in PUCT, so that the
 * leaves of one round spread out. */
static void completed_sigma(const SearchObject *s, const Tree *t, const Node *nd, int clean, float *out) {
    const Node *ch = &t->nodes[nd->first_child];
    double sum_n = 0.0, sum_p = 0.0, sum_pq = 0.0;
    int max_n = 0;
    for (int k = 0; k < nd->num_children; k++) {
        int n = ch[k].visits - (clean ? ch[k].inflight : 0);
        if (n <= 0) continue;
        float w = ch[k].value_sum + (clean ? s->virtual_loss * (float)ch[k].inflight : 0.0f);
        double q = (double)w / n, p = ch[k].prior > FLT_MIN ? ch[k].prior : FLT_MIN;
        out[k] = (float)q;
        sum_n += n;
        sum_p += p;
        sum_pq += p * q;
        if (n > max_n) max_n = n;
    }
    double mixed = sum_n > 0.0 ? (nd->value + sum_n * (sum_pq / sum_p)) / (sum_n + 1.0) : nd->value;
    float scale = 0.5f * (s->c_visit + (float)max_n) * s->c_scale;
    for (int k = 0; k < nd->num_children; k++) {
        int n = ch[k].visits - (clean ? ch[k].inflight : 0);
        float q = n > 0 ? out[k] : (float)mixed;
        out[k] = scale * (q + 1.0f);
    }
}

/* Below the root: the child maximising pi'(a) - N(a) / (1 + sum N), with pi'
 * = softmax(log P + sigma(completed Q)) the improved policy (deterministic). */
static int32_t gumbel_interior_child(const SearchObject *s, const Tree *t, const Node *nd) {
    float *z = s->scratch;
    completed_sigma(s, t, nd, 0, z);
    const Node *ch = &t->nodes[nd->first_child];
    float top = -INFINITY;
    int sum_n = 0;
    for (int k = 0; k < nd->num_children; k++) {
        z[k] += log_prior(ch[k].prior);
        if (z[k] > top) top = z[k];
        sum_n += ch[k].visits;
    }
    double total = 0.0;
    for (int k = 0; k < nd->num_children; k++) {
        z[k] = expf(z[k] - top);
        total += z[k];
    }
    float best = -INFINITY;
    int32_t best_k = nd->first_child;
    for (int k = 0; k < nd->num_children; k++) {
        float score = (float)(z[k] / total) - (float)ch[k].visits / (1.0f + (float)sum_n);
        if (score > best) {
            best = score;
            best_k = nd->first_child + k;
        }
    }
    return best_k;
}

/* Sequential halving's visit count for the simulation with index `index`
 * (0-based, among the root's `n` simulations), `m` moves considered: rounds of
 * one visit to each remaining move, max(1, n / (ceil(log2 m) * remaining))
 * rounds a phase, then the better half remains (at least 2).  Every move
 * remaining has the same count, so the schedule is a list of counts; the
 * simulation goes to the best move (by g + log P + sigma(Q)) that has it.
 * Returns -1 if memory runs out. */
static int halving_visit(Tree *t, int m, int n, int index) {
    if (m <= 1) return index; /* one move: all simulations go to it */
    if (t->schedule_m != m || t->schedule_n != n) {
        if (n > t->schedule_cap) {
            int32_t *sched = PyMem_Realloc(t->schedule, (size_t)n * sizeof(int32_t));
            if (!sched) {
                PyErr_NoMemory();
                return -1;
            }
            t->schedule = sched;
            t->schedule_cap = n;
        }
        int log2m = 0;
        while ((1 << log2m) < m) log2m++;
        int len = 0, count = 0, remaining = m;
        while (len < n) {
            int rounds = n / (log2m * remaining);
            if (rounds < 1) rounds = 1;
            for (int r = 0; r < rounds; r++, count++)
                for (int j = 0; j < remaining && len < n; j++) t->schedule[len++] = count;
            remaining = remaining / 2 > 2 ? remaining / 2 : 2;
        }
        t->schedule_m = m;
        t->schedule_n = n;
    }
    return t->schedule[index < n ? index : n - 1];
}

/* Gumbel score of the root's children: g(a) + log P(a) + sigma(completed Q(a)), into s->scratch. */
static float *root_scores(const SearchObject *s, const Tree *t) {
    const Node *root = &t->nodes[0];
    const Node *ch = &t->nodes[root->first_child];
    float *z = s->scratch;
    completed_sigma(s, t, root, 1, z);
    for (int k = 0; k < root->num_children; k++) z[k] += t->gumbel[ch[k].action] + log_prior(ch[k].prior);
    return z;
}

/* At the root: the best-scoring child among those with the visit count that
 * sequential halving asks for at this simulation (virtual visits count: a
 * round's simulations take consecutive places in the schedule).  The first m
 * simulations thus visit the top m moves by g + log P (Gumbel-top-k).  If one
 * of those children still waits for a value, the ranking would miss it:
 * returns WAIT (the tree's round ends), so the root's choices are those of a
 * search with one leaf a round.  -1 if memory runs out. */
#define WAIT (-2)
static int32_t gumbel_root_child(const SearchObject *s, Tree *t, int limit) {
    const Node *root = &t->nodes[0];
    const Node *ch = &t->nodes[root->first_child];
    int m = s->considered < root->num_children ? s->considered : root->num_children;
    int index = 0;
    for (int k = 0; k < root->num_children; k++) index += ch[k].visits;
    /* the root's own evaluation is a simulation of the budget: its children share the rest */
    int want = halving_visit(t, m, limit > 1 ? limit - 1 : 1, index);
    if (want < 0) return -1;
    const float *z = root_scores(s, t);
    int32_t best_k = -1, any_k = 0;
    for (int k = 0; k < root->num_children; k++) {
        if (z[k] > z[any_k]) any_k = k;
        if (ch[k].visits != want) continue;
        if (ch[k].inflight) return WAIT;
        if (best_k < 0 || z[k] > z[best_k]) best_k = k;
    }
    /* no child with that count (the schedule was not followed): the best one */
    return root->first_child + (best_k >= 0 ? best_k : any_k);
}

/* One simulation in tree i. Returns 1 if it produced a leaf for the network
 * (its observation, mask and key written to obs, mask, key), 0 if it ended on
 * a terminal node (backed up at once), 2 if it ran into a leaf that another
 * simulation of this round is already waiting for (undone) or, with a Gumbel
 * root, if the root's choice must wait for a value (not started), -1 on error. */
static int simulate(SearchObject *s, int i, int limit, float *obs, uint8_t *mask, uint64_t *key) {
    const Rules *r = s->rules ? &s->rules->r : NULL; /* NULL: a Python game, kept at each node */
    Tree *t = &s->trees[i];
    Game *g = &t->game;
    if (r) {
        g->ply = t->root_ply;
        game_invalidate(g);
    }
    int32_t node = 0;
    /* Descend: every edge on the path takes a virtual visit and a virtual loss. */
    while (t->nodes[node].first_child >= 0 && !t->nodes[node].pending) {
        int32_t child;
        if (!s->gumbel)
            child = puct_child(s, t, &t->nodes[node]);
        else if (node == 0)
            child = gumbel_root_child(s, t, limit);
        else
            child = gumbel_interior_child(s, t, &t->nodes[node]);
        if (child == WAIT) return 2; /* nothing on the path yet: the root is the first step */
        if (child < 0) return -1;
        Node *c = &t->nodes[child];
        c->visits += 1;
        c->value_sum -= s->virtual_loss;
        c->inflight += 1;
        if (r && game_push(r, g, c->move) < 0) {
            PyErr_NoMemory();
            return -1;
        }
        node = child;
    }
    Node *leaf = &t->nodes[node];
    if (leaf->pending) {
        for (int32_t n = node; t->nodes[n].parent >= 0; n = t->nodes[n].parent) {
            t->nodes[n].visits -= 1;
            t->nodes[n].value_sum += s->virtual_loss;
            t->nodes[n].inflight -= 1;
        }
        return 2;
    }
    t->nodes[0].visits += 1; /* the root counts simulations */
    if (!r) {
        /* a node reached for the first time is made now: terminal, or expanded and waiting */
        if (!leaf->terminal && make_leaf(s, t, node, obs, mask, key) < 0) return -1;
        leaf = &t->nodes[node]; /* make_leaf may move the node array */
        if (leaf->terminal) {
            backup_path(s, t, node, leaf->value);
            return 0;
        }
    } else {
        if (!leaf->terminal) {
            game_outcome(r, g);
            if (g->reason) {
                leaf->terminal = 1;
                leaf->value = terminal_value(g);
            } else if (g->ply >= s->ply_limit) {
                leaf->terminal = 1; /* the ply limit ends the game without a winner */
                leaf->value = 0.0f;
            }
        }
        if (leaf->terminal) {
            backup_path(s, t, node, leaf->value);
            return 0;
        }
        if (expand(s, t, node) < 0) return -1;
        leaf = &t->nodes[node]; /* expand may move the node array */
        write_observation(r, g, &s->layout, g->hist[g->ply].side, obs);
        memset(mask, 0, (size_t)r->naction);
        for (int k = 0; k < g->nlegal; k++) mask[g->legal_action[k]] = 1;
        *key = observation_key(r, g, &s->layout);
    }
    leaf->pending = 1;
    if (s->num_leaves >= s->cap_leaves) {
        int cap = s->cap_leaves ? 2 * s->cap_leaves : 256;
        Leaf *leaves = PyMem_Realloc(s->leaves, (size_t)cap * sizeof(Leaf));
        if (!leaves) {
            PyErr_NoMemory();
            return -1;
        }
        s->leaves = leaves;
        s->cap_leaves = cap;
    }
    s->leaves[s->num_leaves].tree = i;
    s->leaves[s->num_leaves].node = node;
    s->num_leaves++;
    return 1;
}

static int Search_init(SearchObject *s, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"rules", "num_trees", "c_puct", "discount", "virtual_loss", "fpu",
                             "ply_limit", "history", "last_move", "root", "considered", "c_visit",
                             "c_scale", "num_actions", "observation_size", "leaf", NULL};
    PyObject *rules, *leaf = Py_None;
    const char *root = "puct";
    int num_trees, ply_limit = 1 << 30, history = 1, last_move = 0, considered = 16, num_actions = 0;
    Py_ssize_t observation_size = 0;
    float c_puct = 1.25f, discount = 0.99f, virtual_loss = 1.0f, fpu = 0.0f, c_visit = 50.0f, c_scale = 1.0f;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "Oi|ffffiipsiffinO", kwlist, &rules, &num_trees, &c_puct,
                                     &discount, &virtual_loss, &fpu, &ply_limit, &history, &last_move, &root,
                                     &considered, &c_visit, &c_scale, &num_actions, &observation_size, &leaf))
        return -1;
    if (rules != Py_None && !PyObject_TypeCheck(rules, &RulesType)) {
        PyErr_Format(PyExc_TypeError, "rules must be a Rules object or None, got %s", Py_TYPE(rules)->tp_name);
        return -1;
    }
    if (rules == Py_None && !(PyCallable_Check(leaf) && num_actions >= 1 && num_actions <= INT16_MAX &&
                              observation_size >= 1)) {
        PyErr_Format(PyExc_ValueError, "a search without rules needs num_actions in [1, %d], observation_size >= 1 "
                     "and a callable leaf", INT16_MAX);
        return -1;
    }
    if (num_trees < 1) {
        PyErr_Format(PyExc_ValueError, "num_trees must be >= 1, got %d", num_trees);
        return -1;
    }
    if (check_history(history) < 0) return -1;
    int gumbel = strcmp(root, "gumbel") == 0;
    if (!gumbel && strcmp(root, "puct") != 0) {
        PyErr_Format(PyExc_ValueError, "root must be 'puct' or 'gumbel', got '%s'", root);
        return -1;
    }
    if (considered < 1) {
        PyErr_Format(PyExc_ValueError, "considered must be >= 1, got %d", considered);
        return -1;
    }
    if (!(c_visit >= 0.0f && c_scale >= 0.0f && isfinite(c_visit) && isfinite(c_scale))) {
        PyErr_SetString(PyExc_ValueError, "c_visit and c_scale must be finite and >= 0");
        return -1;
    }
    if (s->trees) {
        PyErr_SetString(PyExc_RuntimeError, "Search is already initialised");
        return -1;
    }
    if (rules != Py_None) {
        Py_INCREF(rules);
        s->rules = (RulesObject *)rules;
        s->naction = s->rules->r.naction;
        s->layout = obs_layout(&s->rules->r, history, last_move);
        s->obs_size = (Py_ssize_t)s->rules->r.nsq * s->layout.channels;
    } else {
        Py_INCREF(leaf);
        s->leaf = leaf;
        s->naction = num_actions;
        s->obs_size = observation_size;
    }
    s->num_trees = num_trees;
    s->c_puct = c_puct;
    s->discount = discount;
    s->virtual_loss = virtual_loss;
    s->fpu = fpu;
    s->gumbel = gumbel;
    s->considered = considered;
    s->c_visit = c_visit;
    s->c_scale = c_scale;
    s->ply_limit = ply_limit;
    s->trees = PyMem_Calloc((size_t)num_trees, sizeof(Tree));
    if (!s->trees) {
        PyErr_NoMemory();
        return -1;
    }
    if (!s->rules)
        for (int i = 0; i < num_trees; i++) {
            s->trees[i].games = PyMem_Calloc(1, sizeof(PyObject *)); /* grown with the nodes */
            if (!s->trees[i].games) {
                PyErr_NoMemory();
                return -1;
            }
        }
    if (gumbel) {
        size_t A = (size_t)s->naction;
        s->scratch = PyMem_Calloc(A, sizeof(float));
        s->noise = PyMem_Calloc((size_t)num_trees * A, sizeof(float));
        if (!s->scratch || !s->noise) {
            PyErr_NoMemory();
            return -1;
        }
        for (int i = 0; i < num_trees; i++) s->trees[i].gumbel = s->noise + (size_t)i * A;
    }
    return 0;
}

/* Drop tree t's node games (other games only). */
static void tree_release_games(Tree *t) {
    if (!t->games) return;
    for (int32_t n = 0; n < t->num_nodes; n++) Py_CLEAR(t->games[n]);
}

static void Search_dealloc(SearchObject *s) {
    for (int i = 0; s->trees && i < s->num_trees; i++) {
        tree_release_games(&s->trees[i]);
        PyMem_Free(s->trees[i].games);
        PyMem_Free(s->trees[i].nodes);
        PyMem_Free(s->trees[i].schedule);
        game_free(&s->trees[i].game);
    }
    PyMem_Free(s->trees);
    PyMem_Free(s->scratch);
    PyMem_Free(s->noise);
    PyMem_Free(s->leaves);
    Py_XDECREF(s->rules);
    Py_XDECREF(s->leaf);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

#define SEARCH_READY(s)                                                         \
    if (!(s)->trees) {                                                          \
        PyErr_SetString(PyExc_RuntimeError, "Search.__init__ was not called"); \
        return NULL;                                                            \
    }

static int tree_index(SearchObject *s, PyObject *obj) {
    long i = PyLong_AsLong(obj);
    if (i == -1 && PyErr_Occurred()) return -1;
    if (i < 0 || i >= s->num_trees) {
        PyErr_Format(PyExc_IndexError, "tree %ld outside [0, %d)", i, s->num_trees);
        return -1;
    }
    return (int)i;
}

/* set_root(i, position_or_game): tree i searches from a copy of the chess position (with its
 * history), or from the game object itself (other games: it is kept, not copied). */
static PyObject *Search_set_root(SearchObject *s, PyObject *args) {
    PyObject *o_i, *o_pos;
    SEARCH_READY(s);
    if (!PyArg_ParseTuple(args, "OO", &o_i, &o_pos)) return NULL;
    int i = tree_index(s, o_i);
    if (i < 0) return NULL;
    Tree *t = &s->trees[i];
    if (s->rules) {
        if (!PyObject_TypeCheck(o_pos, &PositionType))
            return PyErr_Format(PyExc_TypeError, "set_root needs a Position, got %s", Py_TYPE(o_pos)->tp_name);
        if (((PositionObject *)o_pos)->rules != s->rules)
            return PyErr_Format(PyExc_ValueError, "the position is of another variant");
    }
    if (s->num_leaves) return PyErr_Format(PyExc_RuntimeError, "set_root between select and backup");
    if (s->rules) {
        PositionObject *pos = (PositionObject *)o_pos;
        int n = pos->g.ply + 1;
        if (game_reserve(&t->game, n + 64) < 0) return PyErr_NoMemory();
        memcpy(t->game.hist, pos->g.hist, (size_t)n * sizeof(Board));
        t->game.ply = t->root_ply = pos->g.ply;
        game_invalidate(&t->game);
    }
    tree_release_games(t);
    t->num_nodes = 0;
    if (tree_add_nodes(t, 1) < 0) return NULL;
    if (!s->rules) {
        Py_INCREF(o_pos);
        t->games[0] = o_pos;
    }
    Node *root = &t->nodes[0];
    memset(root, 0, sizeof *root);
    root->parent = -1;
    root->first_child = -1;
    root->action = -1;
    if (t->gumbel) memset(t->gumbel, 0, (size_t)s->naction * sizeof(float)); /* no noise until set_gumbel */
    t->has_root = 1;
    Py_RETURN_NONE;
}

/* select(k, observations, masks, keys) -> n: run up to k simulations in every
 * tree that has fewer than `limit` visits; the n leaves that need the network
 * are written to observations[:n] (float32 (N, H, W, C)), masks[:n] (int8 (N, A))
 * and keys[:n] (uint64, a hash of the observation). */
static PyObject *Search_select(SearchObject *s, PyObject *args) {
    int k, limit;
    PyObject *o_obs, *o_masks, *o_keys;
    SEARCH_READY(s);
    if (!PyArg_ParseTuple(args, "iiOOO", &k, &limit, &o_obs, &o_masks, &o_keys)) return NULL;
    if (s->num_leaves) return PyErr_Format(PyExc_RuntimeError, "select called twice without backup");
    if (k > INT16_MAX) return PyErr_Format(PyExc_ValueError, "k must be at most %d, got %d", INT16_MAX, k);
    Py_ssize_t per_obs = s->obs_size, A = s->naction;
    Py_buffer obs, masks, keys;
    if (PyObject_GetBuffer(o_obs, &obs, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (PyObject_GetBuffer(o_masks, &masks, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&obs);
        return NULL;
    }
    if (PyObject_GetBuffer(o_keys, &keys, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&obs);
        PyBuffer_Release(&masks);
        return NULL;
    }
    Py_ssize_t capacity = obs.len / (Py_ssize_t)(per_obs * sizeof(float));
    PyObject *result = NULL;
    if (obs.itemsize != 4 || obs.len % (per_obs * (Py_ssize_t)sizeof(float)) || masks.len < capacity * A ||
        keys.len < capacity * 8) {
        PyErr_Format(PyExc_ValueError, "buffers must be float32 (N, ...) of %zd values each, int8 (N, %zd) and "
                     "uint64 (N,)", per_obs, A);
        goto done;
    }
    if ((Py_ssize_t)s->num_trees * k > capacity) {
        PyErr_Format(PyExc_ValueError, "buffers hold %zd leaves, select may need %zd", capacity,
                     (Py_ssize_t)s->num_trees * k);
        goto done;
    }
    int n = 0;
    for (int i = 0; i < s->num_trees; i++) {
        Tree *t = &s->trees[i];
        if (!t->has_root) continue;
        for (int j = 0; j < k && t->nodes[0].visits < limit; j++) {
            int got = simulate(s, i, limit, (float *)obs.buf + n * per_obs, (uint8_t *)masks.buf + (Py_ssize_t)n * A,
                               (uint64_t *)keys.buf + n);
            if (got < 0) goto done;
            if (got == 2) break; /* the tree's open leaves are all waiting: wait with them */
            n += got;
        }
    }
    result = PyLong_FromLong(n);
done:
    PyBuffer_Release(&obs);
    PyBuffer_Release(&masks);
    PyBuffer_Release(&keys);
    return result;
}

/* backup(priors, values): priors float32 (n, A) (normalised over the legal
 * actions), values float32 (n,) for the side to move, for the n leaves of the
 * last select. */
static PyObject *Search_backup(SearchObject *s, PyObject *args) {
    PyObject *o_priors, *o_values;
    SEARCH_READY(s);
    if (!PyArg_ParseTuple(args, "OO", &o_priors, &o_values)) return NULL;
    Py_ssize_t A = s->naction;
    int n = s->num_leaves;
    Py_buffer priors, values;
    if (get_array(o_priors, &priors, 4, (Py_ssize_t)n * A, 0, "priors") < 0) return NULL;
    if (get_array(o_values, &values, 4, n, 0, "values") < 0) {
        PyBuffer_Release(&priors);
        return NULL;
    }
    for (int j = 0; j < n; j++) {
        Tree *t = &s->trees[s->leaves[j].tree];
        Node *leaf = &t->nodes[s->leaves[j].node];
        const float *p = (const float *)priors.buf + (Py_ssize_t)j * A;
        float total = 0.0f;
        for (int c = 0; c < leaf->num_children; c++) total += p[t->nodes[leaf->first_child + c].action];
        for (int c = 0; c < leaf->num_children; c++) {
            Node *child = &t->nodes[leaf->first_child + c];
            child->prior = total > 0.0f ? p[child->action] / total : 1.0f / leaf->num_children;
        }
        leaf->pending = 0;
        leaf->value = ((const float *)values.buf)[j];
        backup_path(s, t, s->leaves[j].node, leaf->value);
    }
    s->num_leaves = 0;
    PyBuffer_Release(&priors);
    PyBuffer_Release(&values);
    Py_RETURN_NONE;
}

/* mix_root_noise(noise, epsilon): root priors become (1 - eps) P + eps noise[i, action]. */
static PyObject *Search_mix_root_noise(SearchObject *s, PyObject *args) {
    PyObject *o_noise;
    float eps;
    SEARCH_READY(s);
    if (!PyArg_ParseTuple(args, "Of", &o_noise, &eps)) return NULL;
    Py_buffer noise;
    if (get_array(o_noise, &noise, 4, (Py_ssize_t)s->num_trees * s->naction, 0, "noise") < 0) return NULL;
    for (int i = 0; i < s->num_trees; i++) {
        Tree *t = &s->trees[i];
        if (!t->has_root || t->nodes[0].first_child < 0) continue;
        const float *z = (const float *)noise.buf + (Py_ssize_t)i * s->naction;
        for (int c = 0; c < t->nodes[0].num_children; c++) {
            Node *child = &t->nodes[t->nodes[0].first_child + c];
            child->prior = (1.0f - eps) * child->prior + eps * z[child->action];
        }
    }
    PyBuffer_Release(&noise);
    Py_RETURN_NONE;
}

/* set_gumbel(noise): the Gumbel root's noise g, float32 (num_trees, A), for
 * the rooted trees (set_root resets a tree's to 0; zeros: a deterministic search). */
static PyObject *Search_set_gumbel(SearchObject *s, PyObject *arg) {
    SEARCH_READY(s);
    if (!s->gumbel) return PyErr_Format(PyExc_RuntimeError, "set_gumbel needs root='gumbel'");
    Py_buffer noise;
    Py_ssize_t A = s->naction;
    if (get_array(arg, &noise, 4, s->num_trees * A, 0, "noise (float32)") < 0) return NULL;
    const float *g = (const float *)noise.buf;
    for (Py_ssize_t j = 0; j < s->num_trees * A; j++)
        if (!isfinite(g[j])) {
            PyBuffer_Release(&noise);
            return PyErr_Format(PyExc_ValueError, "noise must be finite (tree %zd, action %zd)", j / A, j % A);
        }
    for (int i = 0; i < s->num_trees; i++)
        if (s->trees[i].has_root) memcpy(s->trees[i].gumbel, g + (Py_ssize_t)i * A, (size_t)A * sizeof(float));
    PyBuffer_Release(&noise);
    Py_RETURN_NONE;
}

/* root_policy(policy, actions): for root='gumbel', after the search.
 * policy[i] (float32 (num_trees, A)) = softmax(log P + sigma(completed Q)) over
 * the legal moves of tree i, 0 elsewhere: the improved policy, the training
 * target; actions[i] (int64 (num_trees,)) = the move to play, the best
 * g + log P + sigma(completed Q) among the most visited moves (the last ones
 * sequential halving kept); -1 and zeros for trees without an evaluated root. */
static PyObject *Search_root_policy(SearchObject *s, PyObject *args) {
    PyObject *o_policy, *o_actions;
    SEARCH_READY(s);
    if (!PyArg_ParseTuple(args, "OO", &o_policy, &o_actions)) return NULL;
    if (!s->gumbel) return PyErr_Format(PyExc_RuntimeError, "root_policy needs root='gumbel'");
    if (s->num_leaves) return PyErr_Format(PyExc_RuntimeError, "root_policy between select and backup");
    Py_ssize_t A = s->naction;
    Py_buffer policy, actions;
    if (get_array(o_policy, &policy, 4, s->num_trees * A, 1, "policy (float32)") < 0) return NULL;
    if (get_array(o_actions, &actions, 8, s->num_trees, 1, "actions (int64)") < 0) {
        PyBuffer_Release(&policy);
        return NULL;
    }
    memset(policy.buf, 0, (size_t)policy.len);
    for (int i = 0; i < s->num_trees; i++) {
        Tree *t = &s->trees[i];
        float *p = (float *)policy.buf + (Py_ssize_t)i * A;
        int64_t *action = (int64_t *)actions.buf + i;
        *action = -1;
        if (!t->has_root || t->nodes[0].first_child < 0 || t->nodes[0].pending || !t->nodes[0].num_children) continue;
        const Node *root = &t->nodes[0];
        const Node *ch = &t->nodes[root->first_child];
        float *z = s->scratch;
        completed_sigma(s, t, root, 1, z);
        int most = 0, best = -1;
        float top = -INFINITY;
        for (int k = 0; k < root->num_children; k++) {
            z[k] += log_prior(ch[k].prior);
            if (z[k] > top) top = z[k];
            if (ch[k].visits > most) most = ch[k].visits;
        }
        for (int k = 0; k < root->num_children; k++)
            if (ch[k].visits == most && (best < 0 || z[k] + t->gumbel[ch[k].action] > z[best] + t->gumbel[ch[best].action]))
                best = k;
        *action = ch[best].action;
        double total = 0.0;
        for (int k = 0; k < root->num_children; k++) total += expf(z[k] - top);
        for (int k = 0; k < root->num_children; k++) p[ch[k].action] = (float)(expf(z[k] - top) / total);
    }
    PyBuffer_Release(&policy);
    PyBuffer_Release(&actions);
    Py_RETURN_NONE;
}

/* What fill_root_table writes for each root move. */
enum { ROOT_VISITS, ROOT_Q, ROOT_PRIOR, ROOT_SQUARES };

static float root_edge(const Node *c, int what) {
    switch (what) {
    case ROOT_VISITS: return (float)c->visits;
    case ROOT_PRIOR: return c->prior;
    case ROOT_Q: return c->visits ? c->value_sum / (float)c->visits : 0.0f;
    default: return c->visits ? c->value_squares / (float)c->visits : 0.0f;
    }
}

/* Writes root_edge(what) of each root move into the float32 (num_trees, A)
 * array `out` (0 for other actions and trees without an expanded root). */
static int fill_root_table(SearchObject *s, PyObject *out, int what, const char *name) {
    Py_ssize_t A = s->naction;
    Py_buffer table;
    if (get_array(out, &table, 4, s->num_trees * A, 1, name) < 0) return -1;
    memset(table.buf, 0, (size_t)table.len);
    for (int i = 0; i < s->num_trees; i++) {
        Tree *t = &s->trees[i];
        if (!t->has_root || t->nodes[0].first_child < 0) continue;
        for (int c = 0; c < t->nodes[0].num_children; c++) {
            const Node *child = &t->nodes[t->nodes[0].first_child + c];
            ((float *)table.buf)[i * A + child->action] = root_edge(child, what);
        }
    }
    PyBuffer_Release(&table);
    return 0;
}

/* root_stats(visits, q): visits[i, a] = N of the root's move a in tree i, and
 * q[i, a] = its mean value for the side to move at the root (0 if unvisited). */
static PyObject *Search_root_stats(SearchObject *s, PyObject *args) {
    PyObject *o_visits, *o_q;
    SEARCH_READY(s);
    if (!PyArg_ParseTuple(args, "OO", &o_visits, &o_q)) return NULL;
    if (fill_root_table(s, o_visits, ROOT_VISITS, "visits (float32)") < 0) return NULL;
    if (fill_root_table(s, o_q, ROOT_Q, "q (float32)") < 0) return NULL;
    Py_RETURN_NONE;
}

/* root_priors(priors): priors[i, a] = P of the root's move a in tree i (root
 * noise mixed in), 0 for other actions and for trees without an expanded root. */
static PyObject *Search_root_priors(SearchObject *s, PyObject *arg) {
    SEARCH_READY(s);
    if (fill_root_table(s, arg, ROOT_PRIOR, "priors (float32)") < 0) return NULL;
    Py_RETURN_NONE;
}

/* root_value_squares(squares): squares[i, a] = the mean of the squared values
 * backed up through the root's move a in tree i, for the side to move at the
 * root (0 if unvisited): with Q, the variance of those values. */
static PyObject *Search_root_value_squares(SearchObject *s, PyObject *arg) {
    SEARCH_READY(s);
    if (s->num_leaves) return PyErr_Format(PyExc_RuntimeError, "root_value_squares between select and backup");
    if (fill_root_table(s, arg, ROOT_SQUARES, "squares (float32)") < 0) return NULL;
    Py_RETURN_NONE;
}

/* visits(i) -> simulations done in tree i. */
static PyObject *Search_visits(SearchObject *s, PyObject *arg) {
    SEARCH_READY(s);
    int i = tree_index(s, arg);
    if (i < 0) return NULL;
    return PyLong_FromLong(s->trees[i].has_root ? s->trees[i].nodes[0].visits : 0);
}

/* min_visits() -> the fewest simulations among trees with a root. */
static PyObject *Search_min_visits(SearchObject *s, PyObject *unused) {
    SEARCH_READY(s);
    long low = -1;
    for (int i = 0; i < s->num_trees; i++)
        if (s->trees[i].has_root && (low < 0 || s->trees[i].nodes[0].visits < low)) low = s->trees[i].nodes[0].visits;
    return PyLong_FromLong(low < 0 ? 0 : low);
}

/* clear(i): tree i has no root (it takes no part in select). */
static PyObject *Search_clear(SearchObject *s, PyObject *arg) {
    SEARCH_READY(s);
    int i = tree_index(s, arg);
    if (i < 0) return NULL;
    if (s->num_leaves) return PyErr_Format(PyExc_RuntimeError, "clear between select and backup");
    s->trees[i].has_root = 0;
    tree_release_games(&s->trees[i]);
    s->trees[i].num_nodes = 0;
    Py_RETURN_NONE;
}

static PyObject *Search_get_int(SearchObject *s, void *offset) {
    SEARCH_READY(s);
    return PyLong_FromLong(*(int *)((char *)s + (Py_ssize_t)offset));
}

static PyGetSetDef Search_getset[] = {
    {"num_trees", (getter)Search_get_int, NULL, "number of trees searched together",
     (void *)offsetof(SearchObject, num_trees)},
    {"pending", (getter)Search_get_int, NULL, "leaves selected and waiting for backup",
     (void *)offsetof(SearchObject, num_leaves)},
    {NULL}};

static PyMethodDef Search_methods[] = {
    {"set_root", (PyCFunction)Search_set_root, METH_VARARGS, "set_root(i, position): search tree i from position"},
    {"select", (PyCFunction)Search_select, METH_VARARGS,
     "select(k, limit, observations, masks, keys) -> n leaves needing the network"},
    {"backup", (PyCFunction)Search_backup, METH_VARARGS, "backup(priors, values) for the leaves of the last select"},
    {"mix_root_noise", (PyCFunction)Search_mix_root_noise, METH_VARARGS,
     "mix_root_noise(noise, epsilon): blend noise into the expanded roots' priors"},
    {"set_gumbel", (PyCFunction)Search_set_gumbel, METH_O,
     "set_gumbel(noise): the Gumbel root's noise per tree and action (root='gumbel')"},
    {"root_policy", (PyCFunction)Search_root_policy, METH_VARARGS,
     "root_policy(policy, actions): improved policy and chosen move per tree (root='gumbel')"},
    {"root_stats", (PyCFunction)Search_root_stats, METH_VARARGS,
     "root_stats(visits, q): per-action visit counts and mean values at the roots"},
    {"root_priors", (PyCFunction)Search_root_priors, METH_O,
     "root_priors(priors): per-action priors at the roots, root noise mixed in"},
    {"root_value_squares", (PyCFunction)Search_root_value_squares, METH_O,
     "root_value_squares(squares): per-action mean squared backed-up value at the roots"},
    {"visits", (PyCFunction)Search_visits, METH_O, "visits(i) -> simulations done in tree i"},
    {"min_visits", (PyCFunction)Search_min_visits, METH_NOARGS, "fewest simulations among rooted trees"},
    {"clear", (PyCFunction)Search_clear, METH_O, "clear(i): tree i takes no part in select"},
    {NULL}};

PyTypeObject SearchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "minichess_envs._core.Search",
    .tp_doc = "Batched tree search (PUCT, or Gumbel at the root) over many games (see csrc/search.c).",
    .tp_basicsize = sizeof(SearchObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Search_init,
    .tp_dealloc = (destructor)Search_dealloc,
    .tp_getset = Search_getset,
    .tp_methods = Search_methods,
};
