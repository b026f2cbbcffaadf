"""A person against any agent: in the terminal (:mod:`agents.play.terminal`, ``minichess play``)
and in the browser (:mod:`agents.play.web`, ``minichess serve``, needs the ``[play]`` extra)."""
