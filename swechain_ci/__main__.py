from swechain_ci.cli import main

main()
