# fish completion for flemma-sandbox: copy it to
# ~/.config/fish/completions/flemma-sandbox.fish
function __flemma_sandbox_names
    flemma-sandbox list 2>/dev/null | awk '$3 == "KiB" && $2 ~ /^[0-9]+$/ { print $1 }'
end
set -l commands run list status log diff apply discard reset delete gc help
complete -c flemma-sandbox -f
complete -c flemma-sandbox -n "not __fish_seen_subcommand_from $commands" -a "$commands"
complete -c flemma-sandbox -n "__fish_seen_subcommand_from run status log diff apply discard reset delete" -a "(__flemma_sandbox_names)"
complete -c flemma-sandbox -n "__fish_seen_subcommand_from run" -l direct -d "work on your tree, not the sandbox's copy"
complete -c flemma-sandbox -n "__fish_seen_subcommand_from run" -l raw-terminal -d "pass clipboard writes and terminal queries"
complete -c flemma-sandbox -n "__fish_seen_subcommand_from list" -l all -d "every project's sandboxes"
complete -c flemma-sandbox -n "__fish_seen_subcommand_from delete gc" -l force -d "also with work not applied"
complete -c flemma-sandbox -n "__fish_seen_subcommand_from discard" -l force -d "do not ask"
