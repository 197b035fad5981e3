from .cli.main import main

# guarded: a process multiprocessing spawns from the command (a user's scanner or hook may start one) imports the
# main module again, as __mp_main__, and must not run the command once more
if __name__ == "__main__":
    raise SystemExit(main())
