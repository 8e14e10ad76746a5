import sys

try:
    from recall.cli import main
except KeyboardInterrupt:  # Ctrl-C before main's own handler is in place
    print("recall: interrupted", file=sys.stderr)
    raise SystemExit(130) from None

raise SystemExit(main())
