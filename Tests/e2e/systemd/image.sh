# systemd/image.sh - the bookworm-systemd guest (`--guest bookworm-systemd`), sourced by run.sh after
# image.sh: the same bookworm root, kernel, modules and btvirt, plus what booting systemd as PID 1 and
# installing a local .deb take:
#   systemd, systemd-sysv    PID 1, journald, systemctl, systemd-run (udev is not needed: btvirt's
#                            controllers are started by the suite, and bluetooth.service by systemctl)
#   adduser                  the clicker-tally package's Depends: (its postinst creates the accounts)
# Everything else the packages name (libc6, libdbus-1-3, libbluetooth3, libsqlite3-0, libstdc++6, libpq5,
# libgcc-s1; bluez and dbus, recommended) is already in the image, so `apt-get install ./x.deb`
# resolves with no network and no package lists.
# run.sh keys this image by image.sh, this file and the package list: img-bookworm-systemd-<hash>.
E2E_PKGS=$E2E_PKGS,systemd,systemd-sysv,adduser
