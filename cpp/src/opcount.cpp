// Operation counts: the algorithms instantiated with a counting scalar (filled in by issue 5).
