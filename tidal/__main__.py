from tidal.cli.main import main

main()
