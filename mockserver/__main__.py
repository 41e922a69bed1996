from mockserver.cli import main

main()
