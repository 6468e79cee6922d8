/** Free TCP ports on 127.0.0.1 for servers a test starts. */
export { freePort } from '../../lib/net';
