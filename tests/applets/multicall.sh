# multicall dispatch: argv[0], "featurebox APPLET", --list, --install, exit 127.
. "$(dirname "$0")/../lib/testing.sh"

applets=$(sed -n 's/^APPLET(\([^,]*\),.*/\1/p' "$FB_TOP/applets/applets.def")
testing "--list names every registered applet" "$FB --list" "$applets\n"
testing "unknown applet: exit 127" "$FB nosuch 2>&1; echo \$?" "featurebox: applet not found: nosuch\n127\n"
testing "no arguments: usage on stderr, exit 2" "$FB 2>&1 >/dev/null | grep -c '^Usage: featurebox APPLET'; $FB 2>/dev/null; echo \$?" "1\n2\n"
testing "--help lists the applets" "$FB --help | grep -c 'Applets: dt-labeller'" "1\n"
testing "--version" "$FB --version" "featurebox 0.1.0\n"
testing "featurebox APPLET --version" "$FB dt-labeller --version" "dt-labeller (featurebox) 0.1.0\n"

cp "$FBBIN" "$W/featurebox"
ln -s featurebox "$W/dt-labeller"
ln -s featurebox "$W/nosuch"
testing "applet chosen by argv[0]" "$FBRUN $W/dt-labeller --version" "dt-labeller (featurebox) 0.1.0\n"
testing "unknown argv[0]: exit 127" "$FBRUN $W/nosuch 2>&1; echo \$?" "featurebox: applet not found: nosuch\n127\n"

mkdir -p "$W/bin" "$W/sbin"
testing "--install -s DIR makes symlinks" \
	"$FBRUN $W/featurebox --install -s $W/bin; echo \$?; readlink $W/bin/dt-labeller" "0\n$W/featurebox\n"
testing "installed symlink runs the applet" "$FBRUN $W/bin/dt-labeller --version" "dt-labeller (featurebox) 0.1.0\n"
testing "--install DIR makes hard links" \
	"$FBRUN $W/featurebox --install $W/sbin; echo \$?; [ $W/sbin/dt-labeller -ef $W/featurebox ] && echo same" "0\nsame\n"
testing "--install again is a no-op" \
	"$FBRUN $W/featurebox --install $W/sbin; echo \$?; $FBRUN $W/featurebox --install -s $W/bin; echo \$?" "0\n0\n"
mkdir -p "$W/other"; echo mine >"$W/other/dt-labeller"
testing "--install leaves a foreign file alone: exit 1" \
	"$FBRUN $W/featurebox --install $W/other 2>$W/err; echo \$?; grep -c 'exists and is not a link' $W/err; cat $W/other/dt-labeller" "1\n1\nmine\n"
testing "--list to a full disk: exit 1" "$FB --list >/dev/full 2>/dev/null; echo \$?" "1\n"
testing "--help to a full disk: exit 1" "$FB dt-labeller --help >/dev/full 2>/dev/null; echo \$?" "1\n"
testing "--install without DIR: exit 2" "$FB --install 2>/dev/null; echo \$?" "2\n"

done_testing
