from benchmarks.capture.cli import main

raise SystemExit(main())
