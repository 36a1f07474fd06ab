from smtcoll.cli import main

main()
