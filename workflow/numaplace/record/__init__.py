"""Records: the run record's format, written, read, kept and set aside."""
