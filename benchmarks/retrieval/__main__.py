"""`python -m benchmarks.retrieval`: run the retrieval benchmarks."""

from benchmarks.retrieval.cli import main

raise SystemExit(main())
