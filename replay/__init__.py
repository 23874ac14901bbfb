"""Moving the log into views and through time: snapshots, audit history, chain verification."""
