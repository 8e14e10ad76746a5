from recall.cli import main

raise SystemExit(main())
