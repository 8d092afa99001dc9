from kun.cli import main

main()
