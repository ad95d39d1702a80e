# bash completion for gpudoc: the commands, their subcommands and, for each, its long options,
# read at completion time from `gpudoc [COMMAND...] --help`, so that they are always the installed
# binary's own. Installed as /usr/share/bash-completion/completions/gpudoc (the .deb does).

# _gpudoc_help_words KIND WORD...: from `gpudoc WORD... --help`, the subcommands (KIND=commands) or
# the long options (KIND=options).
_gpudoc_help_words() {
  local kind=$1
  shift
  local help
  help=$(command gpudoc "$@" --help 2>/dev/null) || return 0
  if [[ $kind == commands ]]; then
    # The names at the start of the "Subcommands:" section's entries, up to the next heading.
    printf '%s\n' "$help" | sed -n '/^Subcommands:/,/^[^ ]/{/^  [a-z][a-z0-9-]*\( \|$\)/s/^  \([a-z][a-z0-9-]*\).*/\1/p;}'
  else
    printf '%s\n' "$help" | sed -n 's/^ *\(-[a-zA-Z0-9],\)\{0,1\}\(--[a-z][a-z0-9-]*\).*/\2/p'
  fi
}

_gpudoc() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local -a path=()
  local i word subcommands
  # The command path so far: each word that is a subcommand of the path before it; after `--`
  # (a program gpudoc runs) nothing is completed but file names.
  for ((i = 1; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if [[ $word == -- ]]; then
      COMPREPLY=()
      return 0
    fi
    [[ $word == -* ]] && continue
    subcommands=$(_gpudoc_help_words commands "${path[@]}")
    if grep -qxF -- "$word" <<<"$subcommands"; then
      path+=("$word")
    fi
  done
  # After an option that takes a value (shown with an upper-case placeholder in the help), files.
  if [[ $prev == --* ]] && command gpudoc "${path[@]}" --help 2>/dev/null |
    grep -qE "^ *(-[a-zA-Z0-9],)?${prev}( [A-Z]| +[A-Z][A-Z]+ )"; then
    COMPREPLY=()
    compopt -o default 2>/dev/null
    return 0
  fi
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(_gpudoc_help_words options "${path[@]}")" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -W "$(_gpudoc_help_words commands "${path[@]}")" -- "$cur")
    ((${#COMPREPLY[@]})) || compopt -o default 2>/dev/null
  fi
  return 0
}
complete -F _gpudoc gpudoc
