"""How the model gateway speaks to each kind of upstream, behind one small ``Provider`` protocol."""
