from llmfix.cli import main

main()
