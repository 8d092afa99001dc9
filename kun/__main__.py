from kun.entry import main

main()
