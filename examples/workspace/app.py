"""The demo app's entry point."""


def main() -> None:
    # TODO: read the user name from the command line
    print("hello")


if __name__ == "__main__":
    main()
