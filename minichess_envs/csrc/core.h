/*
 * core.h -- what the Python bindings of the engine share across their files:
 * module.c (the Rules and Position types, the module), batch.c (batched env
 * stepping) and search.c (the tree search).  The engine itself is engine.h.
 */
#ifndef MINICHESS_CORE_H
#define MINICHESS_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "engine.h"

/* A variant's compiled rules, read-only once built. */
typedef struct {
    PyObject_HEAD
    Rules r;
} RulesObject;

/* A game position with its history: the Python face of a Game. */
typedef struct {
    PyObject_HEAD
    RulesObject *rules;
    PyObject *variant; /* opaque to C: the Python variant spec */
    Game g;
} PositionObject;

extern PyTypeObject RulesType, PositionType, SearchType;
extern PyObject *IllegalMoveError; /* subclass of ValueError */

/* Borrow the C buffer of an argument with the expected item size and length. */
int get_array(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, Py_ssize_t count, int writable, const char *what);
/* history must be 1..MAX_HISTORY; sets ValueError and returns -1 otherwise. */
int check_history(int history);

PyObject *core_step_random_duels(PyObject *module, PyObject *args);
PyObject *core_write_batch(PyObject *module, PyObject *args);

#endif /* MINICHESS_CORE_H */
